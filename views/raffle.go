package views

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/seckill/seckill/db/fair/verify"
	"github.com/seckill/seckill/db/model"
)

// RaffleView is a raffle goods' page for a shopper: the goods, the draw's
// public record and the shopper's entry (nil: none, or not signed in).
type RaffleView struct {
	Goods model.Goods
	Draw  model.RaffleDraw
	Entry *model.RaffleEntry
	Now   time.Time
	// Origin is the site's address as the shopper reached it, for the check command.
	Origin string
	// Leftovers: the draw left units no entry can claim, sold first come on the goods page.
	Leftovers bool
	// OrderStatus is the status of the order a won entry held and lost
	// (expired, cancelled or failed): the shopper won, then did not pay.
	OrderStatus string
}

// RaffleCheckCommand is the shell command anyone can run to check a draw
// (docs/FAIR_SALES.md "Checking a draw"): verify-draw, or by hand the
// seed's hash, the randomness and the draw's order, recomputed.
func RaffleCheckCommand(origin string, goodsID int64) string {
	return `seckill verify-draw ` + origin + ` ` + i64(goodsID) + `   # every check (-beacon URL when a beacon round is named)
# or by hand:
curl -s ` + origin + `/api/goods/` + i64(goodsID) + `/draw > draw.json
seed=$(jq -r .seed draw.json); root=$(jq -r .entries_root draw.json); beacon=$(jq -r '.beacon // empty' draw.json)
printf %s "$seed" | sha256sum            # prints seed_hash
r=$(printf '%s:%s%s' "$seed" "$root" "${beacon:+:$beacon}" | sha256sum | cut -d' ' -f1)   # randomness
jq -r '.order[]' draw.json | while read -r u; do
  printf '%s %s\n' "$(printf '%s:%s' "$r" "$u" | sha256sum | cut -d' ' -f1)" "$u"
done | LC_ALL=C sort | cut -d' ' -f2      # prints order; the first winners won`
}

// Raffle page phases, from the clock and the draw.
const (
	RaffleSoon   = "soon"   // entries not open yet
	RaffleOpen   = "open"   // entries open
	RaffleClosed = "closed" // the start passed: the draw is (about to be) made
	RaffleDrawn  = "drawn"
)

// RafflePhase is where the raffle stands at v.Now.
func (v RaffleView) RafflePhase() string {
	switch {
	case v.Draw.DrawnAt != nil:
		return RaffleDrawn
	case !v.Now.Before(v.Goods.StartAt):
		return RaffleClosed
	case v.Goods.EntryStartAt != nil && v.Now.Before(*v.Goods.EntryStartAt):
		return RaffleSoon
	default:
		return RaffleOpen
	}
}

// entryState is the shopper's entry state, "none" without one.
func (v RaffleView) entryState() string {
	if v.Entry == nil {
		return "none"
	}
	return v.Entry.State
}

func (v RaffleView) entryOpens() time.Time { return entryOpensOf(v.Goods) }

// entryOpensOf is when the raffle's entries open.
func entryOpensOf(g model.Goods) time.Time {
	if g.EntryStartAt != nil {
		return *g.EntryStartAt
	}
	return g.StartAt
}

// orderEntry is one entry of the draw's order as the page lists it: by its
// leaf in the entries root (fair/verify/merkle.go), not the entrant's user
// ID, so no shopper reads another's; each finds theirs by the leaf that
// GET /api/goods/{id}/entries/me gives them, and the page marks the reader's.
type orderEntry struct {
	Leaf   string // hex SHA-256("entry:" + goods ID + ":" + user ID)
	Winner bool
	Yours  bool
}

// orderEntries is the draw's order by leaf; me is the reader's user ID (0: none).
func (v RaffleView) orderEntries(me int64) []orderEntry {
	out := make([]orderEntry, len(v.Draw.Order))
	for i, u := range v.Draw.Order {
		leaf := verify.EntryLeaf(v.Goods.ID, u)
		out[i] = orderEntry{Leaf: hex.EncodeToString(leaf[:]), Winner: int64(i) < v.winners(), Yours: me != 0 && u == me}
	}
	return out
}

// shortLeaf is the start of a leaf, enough to tell the entries apart on a page.
func shortLeaf(leaf string) string {
	if len(leaf) > 12 {
		return leaf[:12]
	}
	return leaf
}

func (v RaffleView) winners() int64 {
	if v.Draw.Winners != nil {
		return *v.Draw.Winners
	}
	return 0
}

// winnersText is "1 winner" or "n winners", in the reader's language.
func winnersText(ctx context.Context, n int64) string {
	if n == 1 {
		return T(ctx, "1 winner")
	}
	return F(ctx, "%d winners", n)
}

// wonUnpaidText is what a shopper reads who won a raffle and whose order
// then ended unpaid, by the order's status: a format taking the order number.
func wonUnpaidText(status string) string {
	switch status {
	case "expired":
		return "Your order %s expired unpaid."
	case "cancelled":
		return "Your order %s was cancelled."
	}
	return "Your order %s ended unpaid."
}

// userID is the signed-in reader's user ID, 0 when none.
func userID(p Page) int64 {
	if p.User == nil {
		return 0
	}
	return p.User.ID
}
