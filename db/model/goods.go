package model

import "time"

// Slot states as the API shows them.
const (
	SlotUpcoming = "upcoming"
	SlotLive     = "live"
	SlotEnded    = "ended"
)

// Slot is a time window in which a merchant's goods are on seckill sale.
type Slot struct {
	ID         int64     `json:"id"`
	MerchantID int64     `json:"merchant_id"`
	Title      string    `json:"title"`
	StartAt    time.Time `json:"start_at"`
	EndAt      time.Time `json:"end_at"`
	State      string    `json:"state"`
	Hidden     bool      `json:"hidden"`      // hidden from shoppers by its merchant
	EndedEarly bool      `json:"ended_early"` // its merchant ended it before its planned end
	Rehearsal  bool      `json:"rehearsal"`   // a rehearsal: its orders count nowhere and it may be deleted
}

// Goods is an item on sale in a slot; Remaining is live from Redis once the
// goods is loaded, else the last stock SQLite knows.
type Goods struct {
	ID                int64      `json:"id"`
	SlotID            int64      `json:"slot_id"`
	MerchantID        int64      `json:"merchant_id"`
	Title             string     `json:"title"`
	Description       string     `json:"description"`
	PriceCents        int64      `json:"price_cents"`
	SeckillPriceCents int64      `json:"seckill_price_cents"`
	Stock             int64      `json:"stock"`
	LimitPerUser      int64      `json:"limit_per_user"`
	Shards            int        `json:"shards"` // Redis buckets its stock is split into (1: one)
	Remaining         int64      `json:"remaining"`
	StartAt           time.Time  `json:"start_at"`
	EndAt             time.Time  `json:"end_at"`
	State             string     `json:"state"`
	Hidden            bool       `json:"hidden"`                   // hidden from shoppers by its merchant
	SlotHidden        bool       `json:"slot_hidden,omitempty"`    // its slot is hidden, so it is too
	EndedEarly        bool       `json:"ended_early"`              // its merchant ended its sale before the slot's end
	ImageURL          string     `json:"image_url"`                // its picture, "" for none
	PowBits           int        `json:"pow_bits"`                 // proof of work asked of each grab (0: none); raised by the server while under attack
	PreregisteredOnly bool       `json:"preregistered_only"`       // only shoppers who booked its reminder may grab it
	Mode              string     `json:"mode"`                     // how it is sold: ModeFirstCome, ModeQueue or ModeRaffle
	QueueRate         int        `json:"queue_rate"`               // queue: shoppers admitted a second (0: the server's measured capacity)
	AdmissionSeconds  int        `json:"admission_seconds"`        // queue: how long an admission is good for
	EntryStartAt      *time.Time `json:"entry_start_at,omitempty"` // raffle: when entries open (they close at StartAt)
	Rehearsal         bool       `json:"rehearsal"`                // its slot is a rehearsal
}

// How goods are sold (Goods.Mode): a race (first come, first served), a
// virtual waiting room that admits shoppers at a rate, or a draw among the
// entries made before the start.
const (
	ModeFirstCome = "first_come"
	ModeQueue     = "queue"
	ModeRaffle    = "raffle"
)

// DefaultAdmissionSeconds is how long a queue's admission is good for when the merchant does not say.
const DefaultAdmissionSeconds = 120

// Listed reports whether shoppers may see the goods: neither it nor its slot is hidden.
func (g *Goods) Listed() bool { return !g.Hidden && !g.SlotHidden }

// Order statuses. failed marks an order the durable unit guard refused.
const (
	OrderUnpaid    = "unpaid"
	OrderPaid      = "paid"
	OrderExpired   = "expired"
	OrderCancelled = "cancelled"
	OrderFailed    = "failed"
	OrderRefunded  = "refunded" // paid, then refunded: the unit went back on sale while the slot was live
)

// Why an order failed (Order.Failure). Both mean the durable unit guard found
// its unit sold to an earlier order (Redis had sold it twice).
const (
	FailureSoldTwice = "sold_twice" // it was unpaid: nothing was charged
	FailureRefundDue = "refund_due" // it had been paid: the payment is owed back
)

// Order is one unit of goods grabbed by a user.
type Order struct {
	ID          int64     `json:"id"`
	GoodsID     int64     `json:"goods_id"`
	UserID      int64     `json:"user_id"`
	AmountCents int64     `json:"amount_cents"`
	Status      string    `json:"status"`
	Unit        int64     `json:"unit"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	GoodsTitle  string    `json:"goods_title,omitempty"`
	Failure     string    `json:"failure,omitempty"` // why a failed order failed: FailureSoldTwice or FailureRefundDue
	// Checkout: what was paid and with which coupon; set when the order is paid.
	DiscountCents int64      `json:"discount_cents"`
	PaidCents     int64      `json:"paid_cents"`
	UserCouponID  int64      `json:"user_coupon_id,omitempty"`
	PaidAt        *time.Time `json:"paid_at,omitempty"`
	RefundedAt    *time.Time `json:"refunded_at,omitempty"`
	Version       int64      `json:"-"`
}

// OrderConflict is an order from Redis that SQLite refused.
type OrderConflict struct {
	Order
	Reason     string    `json:"reason"`
	DetectedAt time.Time `json:"detected_at"`
	Handled    bool      `json:"handled"`
}

// GoodsStats is the reconciliation of one goods: live counts from Redis
// beside the durable counts in SQLite. At rest remaining+unpaid+paid == stock
// and the two sides agree; Drift names what differs.
type GoodsStats struct {
	Stock         int64        `json:"stock"`
	Remaining     int64        `json:"remaining"`
	Unpaid        int64        `json:"unpaid"`
	Paid          int64        `json:"paid"`
	Expired       int64        `json:"expired"`
	Cancelled     int64        `json:"cancelled"`
	Failed        int64        `json:"failed"`
	RevenueCents  int64        `json:"revenue_cents"`  // gross: the paid orders' amounts before coupons
	DiscountCents int64        `json:"discount_cents"` // what coupons took off the paid orders
	NetCents      int64        `json:"net_cents"`      // what shoppers paid: gross - discount
	Pending       int64        `json:"pending"`        // order changes waiting for the flush
	DurableLagMS  int64        `json:"durable_lag_ms"` // how far the durable record trails: the age of the oldest change waiting (0: none waits)
	Loaded        bool         `json:"loaded"`         // whether the goods is in Redis yet
	DB            GoodsDBStats `json:"db"`
	Drift         []string     `json:"drift"`
}

// GoodsDBStats are the durable counts of one goods in SQLite. Stock is the
// remaining stock as last synced; Conflicts counts orders the durable unit
// guard refused. Unpaid, Paid and RevenueCents count the orders that hold a
// unit; Expired, Cancelled and Failed count every ended order, refused ones
// too, as Redis does.
type GoodsDBStats struct {
	Unpaid        int64 `json:"unpaid"`
	Paid          int64 `json:"paid"`
	Expired       int64 `json:"expired"`
	Cancelled     int64 `json:"cancelled"`
	Failed        int64 `json:"failed"`
	Stock         int64 `json:"stock"`
	RevenueCents  int64 `json:"revenue_cents"`
	DiscountCents int64 `json:"discount_cents"`
	Conflicts     int64 `json:"conflicts"`
}

// SlotTotals are the sums of a slot's goods' live figures.
type SlotTotals struct {
	Stock         int64 `json:"stock"`
	Remaining     int64 `json:"remaining"`
	Sold          int64 `json:"sold"` // units held by orders: unpaid + paid
	Unpaid        int64 `json:"unpaid"`
	Paid          int64 `json:"paid"`
	RevenueCents  int64 `json:"revenue_cents"` // gross, before coupons
	DiscountCents int64 `json:"discount_cents"`
	NetCents      int64 `json:"net_cents"` // what shoppers paid
}

// Add counts one goods' figures into the totals.
func (t *SlotTotals) Add(st GoodsStats) {
	t.Stock += st.Stock
	t.Remaining += st.Remaining
	t.Unpaid += st.Unpaid
	t.Paid += st.Paid
	t.Sold += st.Unpaid + st.Paid
	t.RevenueCents += st.RevenueCents
	t.DiscountCents += st.DiscountCents
	t.NetCents += st.NetCents
}

// SlotSales is a slot with its goods' figures and their totals, for the merchant's pages.
type SlotSales struct {
	Slot
	Goods  []GoodsSales
	Totals SlotTotals
}

// Sample is one second of a goods' sale, for the live charts: stock left,
// orders unpaid and paid, and Grabs, the orders taken since the sale began
// (the goods' order sequence), whose change between samples is grabs a second.
type Sample struct {
	GoodsID   int64 `json:"goods_id"`
	At        int64 `json:"at"` // unix ms
	Remaining int64 `json:"remaining"`
	Unpaid    int64 `json:"unpaid"`
	Paid      int64 `json:"paid"`
	Grabs     int64 `json:"grabs"`
}

// GoodsSales is one goods with its live and durable figures, for the sales dashboard.
type GoodsSales struct {
	Goods
	Stats GoodsStats
}
