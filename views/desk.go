package views

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
)

// DeskOrder is one order as the orders desk shows it.
type DeskOrder struct {
	ID            int64
	Number        string
	GoodsID       int64
	GoodsTitle    string
	UserID        int64
	Username      string
	Status        string
	Failure       string
	AmountCents   int64
	DiscountCents int64
	PaidCents     int64
	UserCouponID  int64
	CreatedAt     time.Time
	PaidAt        *time.Time
	RefundedAt    *time.Time
}

// Path is the order's page on the desk.
func (o DeskOrder) Path() templ.SafeURL { return templ.SafeURL("/admin/orders/" + i64(o.ID)) }

// RefundPath is the order's refund confirmation.
func (o DeskOrder) RefundPath() templ.SafeURL {
	return templ.SafeURL("/admin/orders/" + i64(o.ID) + "/refund")
}

// DeskView is one page of the orders desk, with the search and filters that made it.
type DeskView struct {
	Q          string
	GoodsID    int64
	SlotID     int64
	Status     string
	From, To   string // YYYY-MM-DD as entered
	Statuses   []string
	Goods      []DeskChoice // the goods and slots the filters offer, newest first
	Slots      []DeskChoice
	Orders     []DeskOrder
	NextBefore string // the cursor of the next, older page; "" on the last
	Paged      bool   // this is not the first page
}

// query is the desk's search and filters as a query string, with before when not empty.
func (v DeskView) query(before string) string {
	q := url.Values{}
	set := func(k, val string) {
		if val != "" && val != "0" {
			q.Set(k, val)
		}
	}
	set("q", v.Q)
	set("goods_id", strconv.FormatInt(v.GoodsID, 10))
	set("slot_id", strconv.FormatInt(v.SlotID, 10))
	set("status", v.Status)
	set("from", v.From)
	set("to", v.To)
	set("before", before)
	return q.Encode()
}

// OlderPath links the next, older page with the same search and filters.
func (v DeskView) OlderPath() templ.SafeURL {
	return templ.SafeURL("/admin/orders?" + v.query(v.NextBefore))
}

// NewestPath links the first page with the same search and filters.
func (v DeskView) NewestPath() templ.SafeURL { return templ.SafeURL("/admin/orders?" + v.query("")) }

// CSVPath exports every order the search and filters find (all pages).
func (v DeskView) CSVPath() templ.SafeURL {
	return templ.SafeURL("/api/admin/orders.csv?" + v.query(""))
}

// Filtered reports whether any search or filter is set.
func (v DeskView) Filtered() bool { return v.query("") != "" }

// DeskStep is one step of an order's history.
type DeskStep struct {
	At        time.Time
	Status    string
	Actor     string
	ActorName string
	Detail    string
	// A payment with a coupon: the coupon's title ("" when unknown) and the discount.
	CouponTitle   string
	DiscountCents int64
}

// stepLabel names a step of an order's history as an event: "Order
// placed", not the field name "Created".
func stepLabel(status string) string {
	if status == "created" {
		return "Order placed"
	}
	return stateLabel(status)
}

// stepDetail says more of a step, in the reader's words: the coupon a
// payment used by its title and the discount as money.
func stepDetail(ctx context.Context, s DeskStep) string {
	if s.Status == "paid" && s.DiscountCents > 0 {
		if s.CouponTitle != "" {
			return F(ctx, "with the coupon “%s”: %s off", s.CouponTitle, Money(s.DiscountCents))
		}
		return F(ctx, "with a coupon: %s off", Money(s.DiscountCents))
	}
	return T(ctx, s.Detail)
}

// DeskOrderView is one order's page on the desk: its history and the
// refund, asked for (Confirm), refused (Error) or made (Done).
type DeskOrderView struct {
	Order     DeskOrder
	History   []DeskStep
	Confirm   bool
	Reason    string
	Error     string
	Done      string
	ReasonMax int
}

// ClaimRow is one red packet grab or coupon claim.
type ClaimRow struct {
	Username    string
	UserID      int64
	At          time.Time
	AmountCents int64  // a red packet grab's amount
	Status      string // a coupon's: unused, used or expired
	OrderID     int64  // the order a used coupon paid for
}

// ClaimsView lists who got a red packet or a coupon, searched by username.
type ClaimsView struct {
	Kind     string // "redpacket" or "coupon"
	ID       int64
	Title    string
	Q        string
	Total    int
	Rows     []ClaimRow
	BackPath string
	CSVPath  string
}

// SearchPath is where the search form goes.
func (v ClaimsView) SearchPath() string {
	if v.Kind == "coupon" {
		return "/admin/coupons/" + i64(v.ID) + "/claims"
	}
	return "/admin/redpackets/" + i64(v.ID) + "/grabs"
}

// actorLabel names who made a step: "shopper alice", "merchant bob", "payment gateway".
func actorLabel(ctx context.Context, s DeskStep) string {
	who := s.Actor
	if who == "gateway" {
		who = "payment gateway"
	}
	who = T(ctx, who)
	if s.ActorName != "" && s.Actor != "gateway" && s.Actor != "system" {
		if strings.EqualFold(s.ActorName, who) { // the demo's "shopper", a shopper: said once
			return s.ActorName
		}
		return who + " " + s.ActorName
	}
	return who
}

// DeskChoice is one goods or slot a desk filter offers.
type DeskChoice struct {
	ID    int64
	Title string
}

// choiceLabel names a goods or slot in a filter: "#12 Title".
func choiceLabel(c DeskChoice) string { return "#" + i64(c.ID) + " " + c.Title }

// hasChoice reports whether id is among the choices (a goods_id from a link may not be).
func hasChoice(cs []DeskChoice, id int64) bool {
	for _, c := range cs {
		if c.ID == id {
			return true
		}
	}
	return false
}

// statusWord is an order's status inside a sentence: "cancelled".
func statusWord(ctx context.Context, status string) string {
	return strings.ToLower(T(ctx, stateLabel(status)))
}
