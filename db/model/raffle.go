package model

import (
	"encoding/json"
	"time"
)

// States of a raffle entry (RaffleEntry.State).
const (
	EntryEntered    = "entered"    // in the raffle, not drawn yet
	EntryWon        = "won"        // drawn (or passed a unit): an unpaid order is theirs
	EntryLost       = "lost"       // their order expired or was cancelled, or the draw's order ended before them
	EntryWaitlisted = "waitlisted" // drawn after the winners: a unit passed on may reach them
)

// RaffleEntry is one shopper's entry in a raffle goods' draw.
type RaffleEntry struct {
	GoodsID   int64     `json:"goods_id"`
	UserID    int64     `json:"-"`
	State     string    `json:"state"`
	EnteredAt time.Time `json:"entered_at"`
	// Position is the entry's place in the draw's order (1 first), after the draw.
	Position int64 `json:"position,omitempty"`
	// OrderID is the order a won entry got (0 while it is being made).
	OrderID int64 `json:"order_id,omitempty"`
	// Inclusion is the entry's place in the entries root, once entries closed.
	*Inclusion
}

// Inclusion proves an entry is in a raffle's published entries root: its
// leaf and the sibling hashes up to the root (fair/verify/merkle.go).
type Inclusion struct {
	Leaf  string      `json:"leaf"`
	Proof []ProofStep `json:"proof"`
}

// ProofStep is one level of a Merkle proof: the sibling's hash (hex) and
// the side it sits on, "left" or "right".
type ProofStep struct {
	Hash string `json:"hash"`
	Side string `json:"side"`
}

// States of a raffle's draw (RaffleDraw.Status).
const (
	DrawOpen          = "open"           // entries open, before the start
	DrawClosed        = "closed"         // entries closed, the draw about to be made
	DrawWaitingBeacon = "waiting_beacon" // entries closed, the draw waits for its beacon round
	DrawDrawn         = "drawn"
)

// RaffleEntryEvent is the live event that tells a shopper their entry changed.
type RaffleEntryEvent struct {
	Type  string       `json:"type"` // "entry"
	Entry *RaffleEntry `json:"entry"`
}

// RaffleDraw is a raffle's public record: the seed's SHA-256 and the
// beacon round from the start, the entries root from the close of entries,
// and after the draw the seed itself, the beacon's randomness, the draw's
// randomness and order, so anyone can recompute it (fair.DrawOrder,
// seckill verify-draw).
type RaffleDraw struct {
	GoodsID  int64  `json:"goods_id"`
	Status   string `json:"status"` // open, closed, waiting_beacon or drawn
	SeedHash string `json:"seed_hash"`
	Entries  int64  `json:"entries"`
	// EntriesRoot is the entries' Merkle root, frozen when entries close.
	EntriesRoot string     `json:"entries_root,omitempty"`
	DrawAt      time.Time  `json:"draw_at"`            // the sale's start, when the draw is made
	DrawnAt     *time.Time `json:"drawn_at,omitempty"` // after the draw
	Seed        string     `json:"seed,omitempty"`     // after the draw
	// BeaconRound is the public beacon's round mixed into the draw (null: none).
	BeaconRound *int64 `json:"beacon_round"`
	// Beacon is that round's randomness, after the draw (null: none yet or no beacon).
	Beacon *string `json:"beacon"`
	// Randomness is SHA-256(seed:entries_root[:beacon]), after the draw.
	Randomness string  `json:"randomness,omitempty"`
	Winners    *int64  `json:"winners,omitempty"` // after the draw: min(stock, entries)
	Order      []int64 `json:"order,omitempty"`   // after the draw: every entry's user ID in the draw's order
	Passed     int64   `json:"passed"`            // units passed on to the next in the order so far
}

// MarshalJSON writes order as a list after the draw, empty too (no entries), and leaves it out before.
func (d RaffleDraw) MarshalJSON() ([]byte, error) {
	type plain RaffleDraw
	if d.DrawnAt == nil {
		return json.Marshal(plain(d))
	}
	order := d.Order
	if order == nil {
		order = []int64{}
	}
	return json.Marshal(struct {
		plain
		Order []int64 `json:"order"`
	}{plain(d), order})
}

// RaffleStats is the merchant's live view of a raffle: the public draw and the entries by state.
type RaffleStats struct {
	Draw       RaffleDraw `json:"draw"`
	Entered    int64      `json:"entered"`
	Won        int64      `json:"won"`
	Paid       int64      `json:"paid"`
	Waitlisted int64      `json:"waitlisted"`
	Lost       int64      `json:"lost"`
}
