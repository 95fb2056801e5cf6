package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The reference model of a first-come sale, for the model-based checker
// (model_test.go): plain Go with no I/O, saying what each answer of the API
// must be and what the sale must hold after it. Each step function both
// answers what the server must answer and moves the model on, so the
// checker calls it, sends the request, and compares.

// modelSale is the model of one sequence's sale: its goods, its shoppers
// (by index) and every order they won.
type modelSale struct {
	Goods    []modelGoods
	Shoppers int
	Orders   []*modelOrder // in the order they were won
	Paused   bool          // the sale_paused switch
	Floor    int           // the pow_floor_bits switch
	ReadOnly bool          // the merchant_read_only switch
	Places   map[int]int64 // the waiting room's places, by shopper
	// Money as the shoppers moved it: every payment and every refund.
	PaidCents, RefundedCents int64
}

// modelGoods are one goods' terms as its merchant set them.
type modelGoods struct {
	Title               string
	Stock, Limit, Price int64
	Shards              int
	PowBits             int // the merchant's proof of work, 0: none
}

// modelOrder is one order won in the sequence. A message names it by N
// (order#N), never by its ID, so that a replay of the sequence fails with
// the same message: rapid shrinks a failure only while it repeats exactly.
type modelOrder struct {
	N         int // its place in the sequence: the N-th order won
	ID        int64
	Goods     int // index in modelSale.Goods
	Shopper   int
	Status    string
	Amount    int64
	ExpiresAt time.Time
}

// modelAnswer is what one answer must be: its HTTP status, its error code
// ("" on success) and, on success, the status of the order it carries.
type modelAnswer struct {
	Status int
	Code   string
	Order  string
}

func (w modelAnswer) String() string {
	if w.Code != "" {
		return fmt.Sprintf("%d %s", w.Status, w.Code)
	}
	if w.Order != "" {
		return fmt.Sprintf("%d (order %s)", w.Status, w.Order)
	}
	return fmt.Sprint(w.Status)
}

func refused(status int, code string) modelAnswer { return modelAnswer{Status: status, Code: code} }

func accepted(status int, order string) modelAnswer { return modelAnswer{Status: status, Order: order} }

// holds tells whether an order in this status holds a unit (and counts
// towards its shopper's limit).
func holds(status string) bool { return status == "unpaid" || status == "paid" }

// Held is how many units of goods g shopper u holds.
func (m *modelSale) Held(g, u int) int64 {
	n := int64(0)
	for _, o := range m.Orders {
		if o.Goods == g && o.Shopper == u && holds(o.Status) {
			n++
		}
	}
	return n
}

// Count is how many orders of goods g are in the status.
func (m *modelSale) Count(g int, status string) int64 {
	n := int64(0)
	for _, o := range m.Orders {
		if o.Goods == g && o.Status == status {
			n++
		}
	}
	return n
}

// Remaining is the units of goods g on sale: every unit an order gave back
// (expired, cancelled, refunded while the sale is live) is on sale again.
func (m *modelSale) Remaining(g int) int64 {
	return m.Goods[g].Stock - m.Count(g, "unpaid") - m.Count(g, "paid")
}

// NetCents is what the paid orders of goods g brought in (no coupons here:
// each paid its whole amount).
func (m *modelSale) NetCents(g int) int64 {
	n := int64(0)
	for _, o := range m.Orders {
		if o.Goods == g && o.Status == "paid" {
			n += o.Amount
		}
	}
	return n
}

// Find is the order of the ID, or nil.
func (m *modelSale) Find(id int64) *modelOrder {
	for _, o := range m.Orders {
		if o.ID == id {
			return o
		}
	}
	return nil
}

// Level is the proof of work a grab of goods g asks now: the merchant's
// bits, never below the floor (the raise on an attack never comes from
// the sequence's few shoppers: one caller's refusals count once).
func (m *modelSale) Level(g int) int {
	if b := m.Goods[g].PowBits; b > 0 {
		return min(max(b, m.Floor), modelMaxPowBits)
	}
	return min(m.Floor, modelMaxPowBits)
}

// modelMaxPowBits is the most work a goods or the floor asks.
const modelMaxPowBits = 24

// PowShape is the challenge asked at a level: bits a nonce and how many
// nonces (four of level-2 bits from level 6 on, the same work in all).
func PowShape(level int) (bits, solutions int) {
	switch {
	case level <= 0:
		return 0, 0
	case level >= 6:
		return level - 2, 4
	}
	return level, 1
}

// Grab is what shopper u's grab of goods g must answer, with an honest
// proof of work or none: refused while the sale is paused, without the
// proof a level asks, at the shopper's limit (asked first), or with
// nothing left; else a new unpaid order, which Won then records.
func (m *modelSale) Grab(g, u int, proof bool) modelAnswer {
	switch {
	case m.Paused:
		return refused(503, "unavailable")
	case m.Level(g) > 0 && !proof:
		return refused(403, "pow_required")
	case m.Held(g, u) >= m.Goods[g].Limit:
		return refused(409, "limit_reached")
	case m.Remaining(g) == 0:
		return refused(409, "sold_out")
	}
	return accepted(201, "unpaid")
}

// Won records the order a grab the model accepted won.
func (m *modelSale) Won(g, u int, id int64, expiresAt time.Time) *modelOrder {
	o := &modelOrder{N: len(m.Orders), ID: id, Goods: g, Shopper: u, Status: "unpaid", Amount: m.Goods[g].Price, ExpiresAt: expiresAt}
	m.Orders = append(m.Orders, o)
	return o
}

// Pay is shopper u paying order o: another's order is not found; a paid
// one answers unchanged; an unpaid one (never past its deadline here: the
// checker lets the expiry settle first) is paid; any other is expired.
func (m *modelSale) Pay(o *modelOrder, u int) modelAnswer {
	if o.Shopper != u {
		return refused(404, "not_found")
	}
	switch o.Status {
	case "paid":
		return accepted(200, "paid")
	case "unpaid":
		o.Status = "paid"
		m.PaidCents += o.Amount
		return accepted(200, "paid")
	}
	return refused(409, "expired")
}

// Cancel is shopper u cancelling order o: a cancelled one answers again;
// a paid one is a conflict; an unpaid one is cancelled and its unit goes
// back on sale; any other has expired.
func (m *modelSale) Cancel(o *modelOrder, u int) modelAnswer {
	if o.Shopper != u {
		return refused(404, "not_found")
	}
	switch o.Status {
	case "cancelled":
		return accepted(200, "cancelled")
	case "paid":
		return refused(409, "conflict")
	case "unpaid":
		o.Status = "cancelled"
		return accepted(200, "cancelled")
	}
	return refused(409, "expired")
}

// Refund is shopper u refunding order o: a refunded one answers again, a
// paid one is refunded (the unit back on sale, the money back), any other
// is a conflict.
func (m *modelSale) Refund(o *modelOrder, u int) modelAnswer {
	if o.Shopper != u {
		return refused(404, "not_found")
	}
	switch o.Status {
	case "refunded":
		return accepted(200, "refunded")
	case "paid":
		m.refund(o)
		return accepted(200, "refunded")
	}
	return refused(409, "conflict")
}

// DeskRefund is the desk refunding order o: only a paid order; one
// refunded already is a conflict (the desk must not refund twice).
// A merchant's (not an admin's) is refused while merchants are read-only.
func (m *modelSale) DeskRefund(o *modelOrder, byMerchant bool) modelAnswer {
	if byMerchant && m.ReadOnly {
		return refused(403, "forbidden")
	}
	if o.Status != "paid" {
		return refused(409, "conflict")
	}
	m.refund(o)
	return accepted(200, "refunded")
}

func (m *modelSale) refund(o *modelOrder) {
	o.Status = "refunded"
	m.RefundedCents += o.Amount
}

// Join is what shopper u's join of the waiting room must answer (its
// sale far ahead: the place is the join number until the shuffle at the
// start): joined already, the same place again; without the proof the floor asks (no challenge is given so long
// before the start), refused; else the next place, which the shopper then
// holds. Places are 1..n, one a shopper: a bijection.
func (m *modelSale) Join(u int) (modelAnswer, int64) {
	if p := m.Places[u]; p > 0 {
		return modelAnswer{Status: 200}, p
	}
	if m.Floor > 0 {
		return refused(403, "pow_required"), 0
	}
	if m.Places == nil {
		m.Places = map[int]int64{}
	}
	m.Places[u] = int64(len(m.Places) + 1)
	return modelAnswer{Status: 201}, m.Places[u]
}

// Unpaid is the unpaid orders, soonest deadline first.
func (m *modelSale) Unpaid() []*modelOrder {
	var out []*modelOrder
	for _, o := range m.Orders {
		if o.Status == "unpaid" {
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ExpiresAt.Before(out[j].ExpiresAt) })
	return out
}

// ExpiryTarget is the clock time to move to so that order o expires
// together with every unpaid order whose deadline is before its own or
// within gap of the last one taken, and every other unpaid order's deadline
// is more than gap ahead: no deadline then lies near the clock, where the
// wall time passing while the checker works could expire it unseen.
func (m *modelSale) ExpiryTarget(o *modelOrder, gap time.Duration) time.Time {
	target := o.ExpiresAt
	for _, u := range m.Unpaid() { // soonest first
		if !u.ExpiresAt.After(target.Add(gap)) && u.ExpiresAt.After(target) {
			target = u.ExpiresAt
		}
	}
	return target
}

// Due is the unpaid orders whose deadline is at or before t.
func (m *modelSale) Due(t time.Time) []*modelOrder {
	var out []*modelOrder
	for _, o := range m.Unpaid() {
		if !o.ExpiresAt.After(t) {
			out = append(out, o)
		}
	}
	return out
}

// Name is how a message names the order of the ID: order#N, or the ID
// itself when the model knows no such order.
func (m *modelSale) Name(id int64) string {
	if o := m.Find(id); o != nil {
		return fmt.Sprintf("order#%d", o.N)
	}
	return fmt.Sprintf("order %d (not won in this sequence)", id)
}

// String is the model's state, for a failure's message: no server ID in it.
func (m *modelSale) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "paused=%v floor=%d read-only=%v paid=%d refunded=%d", m.Paused, m.Floor, m.ReadOnly, m.PaidCents, m.RefundedCents)
	for g, gd := range m.Goods {
		fmt.Fprintf(&b, "; goods#%d stock %d limit %d pow %d remaining %d", g, gd.Stock, gd.Limit, gd.PowBits, m.Remaining(g))
	}
	for _, o := range m.Orders {
		fmt.Fprintf(&b, "; order#%d goods#%d shopper#%d %s", o.N, o.Goods, o.Shopper, o.Status)
	}
	return b.String()
}

// IDs says which server ID each order is, for the log.
func (m *modelSale) IDs() string {
	var b strings.Builder
	for _, o := range m.Orders {
		fmt.Fprintf(&b, " order#%d=%d", o.N, o.ID)
	}
	return strings.TrimSpace(b.String())
}
