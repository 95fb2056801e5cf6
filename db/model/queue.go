package model

import "time"

// Ticket is a shopper's place in a goods' waiting room (mode queue).
type Ticket struct {
	GoodsID int64 `json:"goods_id"`
	// State is TicketWaiting, TicketAdmitted or TicketClosed.
	State string `json:"state"`
	// Position is how many shoppers are ahead, counting oneself (1: next);
	// 0 once admitted or closed. Before the start it is the number of
	// shoppers who have joined so far: the furthest back one may be placed
	// when they are shuffled at the start.
	Position   int64 `json:"position"`
	ETASeconds int64 `json:"eta_seconds"`
	// JoinNumber is the order the shopper joined in (1: first), while
	// waiting or admitted; Place their place in line (1: first), fixed
	// once the start has passed: for those who joined before it, the
	// shuffle's (`seckill queue-place <seed> <joined> <join number>`
	// recomputes it from GET /api/goods/{id}/queue/room).
	JoinNumber int64 `json:"join_number,omitempty"`
	Place      int64 `json:"place,omitempty"`
	// Admission is the signed token the grab sends as X-Admission, while admitted.
	Admission     string     `json:"admission,omitempty"`
	AdmittedUntil *time.Time `json:"admitted_until,omitempty"`
	// Lapsed is set on a closed ticket whose admission ran out unused
	// while the room is open and the sale on: joining again (POST) puts
	// the shopper at the back of the line. A closed ticket without it
	// means the room is closed (no stock left, or the sale is over).
	Lapsed bool `json:"lapsed,omitempty"`
}

// Ticket states.
const (
	TicketWaiting  = "waiting"
	TicketAdmitted = "admitted"
	TicketClosed   = "closed"
)

// QueueStats is the merchant's view of a goods' waiting room.
type QueueStats struct {
	GoodsID int64 `json:"goods_id"`
	// Joined is every shopper who ever joined; Admitted how many of them
	// have been let in so far; Waiting the rest.
	Joined   int64 `json:"joined"`
	Admitted int64 `json:"admitted"`
	Waiting  int64 `json:"waiting"`
	// Rate is the admissions a second used now (the goods' queue_rate, or
	// the measured capacity when that is 0).
	Rate     int64 `json:"rate"`
	Measured bool  `json:"measured"`
	Closed   bool  `json:"closed"`
	// Shuffled tells whether the start has passed and the early shoppers
	// were put in random order; Seed then is the shuffle's seed (hex) and
	// Shuffled how many were shuffled.
	Shuffled int64  `json:"shuffled"`
	Started  bool   `json:"started"`
	Seed     string `json:"seed,omitempty"`

	// The flows, over the last ten seconds: joins and admissions a second.
	InflowPerS  float64 `json:"inflow_per_s"`
	OutflowPerS float64 `json:"outflow_per_s"`
	// NoShows is the admissions that ran out unused.
	NoShows int64 `json:"no_shows"`
	// RateNow is the admissions a second now: queue_rate, or the automatic
	// outflow's (0 while Paused: the grabs answer slowly or fail).
	RateNow int64 `json:"rate_now"`
	Paused  bool  `json:"paused"`
	// ExpectedWaitS is the wait of one joining now (the last in line's ETA);
	// ActualWaitP50S the median wait of the admitted so far, from joining
	// (or the start, for those who joined before it) to admission.
	ExpectedWaitS  int64   `json:"expected_wait_s"`
	ActualWaitP50S float64 `json:"actual_wait_p50_s"`
}

// QueueRoom is a waiting room's public commitment: the SHA-256 (hex) of
// the seed that shuffles the shoppers who joined before the start,
// published from the room's making; Joined is how many joined before the
// start (so far, while it is ahead); Seed is given once Started (the
// pre-queue shuffled), so anyone recomputes every place from it.
type QueueRoom struct {
	GoodsID  int64  `json:"goods_id"`
	SeedHash string `json:"seed_hash"`
	Joined   int64  `json:"joined"`
	Started  bool   `json:"started"`
	Seed     string `json:"seed,omitempty"`
}
