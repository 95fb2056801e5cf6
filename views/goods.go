package views

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// SlotsView is the shopper's slot menu: the live slot and the next ones, and
// the goods of the chosen slot.
type SlotsView struct {
	Slots   []model.Slot
	Current *model.Slot
	Goods   []model.Goods
	Orders  []model.Order // the shopper's, for the cards' limit state
}

// GoodsView is one goods for the shopper, with the caller's orders of it.
type GoodsView struct {
	Goods     model.Goods
	Orders    []model.Order
	Reminders Picker // "Remind me" before an upcoming sale, for a signed-in shopper
	// Leftovers: a raffle's goods whose units left after the draw are sold
	// first come (the page offers the Grab button for them).
	Leftovers bool
}

// OrdersView is the shopper's "My orders".
type OrdersView struct {
	Orders []model.Order
}

// SlotForm is the state of a slot form: the values typed and what is wrong with them.
type SlotForm struct {
	Title   string
	StartAt string // datetime-local value, UTC ("2006-01-02T15:04")
	EndAt   string
	Errors  db.FieldErrors
	Error   string
	// Fixed is a slot whose sale has started: its times are shown, not
	// offered for editing (only the title can change).
	Fixed *model.Slot
	// Rehearsal: the new slot is a rehearsal (the create form only; a slot stays what it was made).
	Rehearsal bool
}

// GoodsForm is the state of a goods form; prices are in yuan as typed ("49.99").
type GoodsForm struct {
	Title         string
	Description   string
	Price         string
	SeckillPrice  string
	Stock         string
	Limit         string
	Demand        string // expected demand, a Demands value ("": normal on create, unchanged on edit)
	Shards        string // the advanced override of Demand's shard count ("": Demand's)
	PowBits       string // the proof of work asked of each grab ("" or 0: off)
	Preregistered bool   // open only to shoppers who booked its reminder
	// How it is sold: a model.Mode* value ("": first come on create,
	// unchanged on edit), a queue's rate and admission, a raffle's entry
	// start (datetime-local in the browser's zone, TZOffset its offset).
	Mode             string
	QueueRate        string
	AdmissionSeconds string
	EntryStartAt     string
	TZOffset         string
	Errors           db.FieldErrors
	Error            string
}

// AdminSlotsView lists the merchant's slots with the form to add one.
type AdminSlotsView struct {
	Slots []model.Slot
	Form  SlotForm
}

// AdminSlotView is one slot's live sales dashboard, with its edit and add-goods forms.
type AdminSlotView struct {
	Slot      model.Slot
	Sales     []model.GoodsSales
	Totals    model.SlotTotals
	SlotForm  SlotForm
	GoodsForm GoodsForm
}

// AdminGoodsView is the reconciliation of one goods, with its edit form.
type AdminGoodsView struct {
	Goods     model.Goods
	Stats     model.GoodsStats
	Conflicts []model.OrderConflict
	Form      GoodsForm
}

// DateTimeLocal formats t (UTC) for a datetime-local input.
func DateTimeLocal(t time.Time) string { return t.UTC().Format("2006-01-02T15:04") }

// CentsInput formats cents for a price input ("49.99").
func CentsInput(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}

// SlotFormOf fills a slot form from a slot.
func SlotFormOf(s model.Slot) SlotForm {
	return SlotForm{Title: s.Title, StartAt: DateTimeLocal(s.StartAt), EndAt: DateTimeLocal(s.EndAt)}.FixedIf(s)
}

// FixedIf marks the form's times fixed when s's sale has started.
func (f SlotForm) FixedIf(s model.Slot) SlotForm {
	if s.State != model.SlotUpcoming {
		f.Fixed = &s
	}
	return f
}

// GoodsFormOf fills a goods form from goods.
func GoodsFormOf(g model.Goods) GoodsForm {
	return GoodsForm{Title: g.Title, Description: g.Description, Price: CentsInput(g.PriceCents),
		SeckillPrice: CentsInput(g.SeckillPriceCents), Stock: i64(g.Stock), Limit: i64(g.LimitPerUser),
		Demand: DemandOf(g.Shards), Shards: customShards(g.Shards), PowBits: i64(int64(g.PowBits)), Preregistered: g.PreregisteredOnly,
		Mode: g.Mode, QueueRate: i64(int64(g.QueueRate)), AdmissionSeconds: i64(int64(g.AdmissionSeconds)), EntryStartAt: entryStart(g)}
}

func entryStart(g model.Goods) string {
	if g.EntryStartAt == nil {
		return ""
	}
	return DateTimeLocal(*g.EntryStartAt)
}

// SaleModes are the ways goods may be sold, as the merchant's form offers them.
var SaleModes = []struct{ Value, Label string }{
	{model.ModeFirstCome, "First come, first served"},
	{model.ModeQueue, "Waiting room (queue)"},
	{model.ModeRaffle, "Raffle (draw)"},
}

// PowBitsSuggested is the proof of work the merchant's form suggests
// (db/goods.DefaultPowBits, which views may not import).
const PowBitsSuggested = 14

// elem is where an element (a link, a countdown, a number the scripts
// move) goes in a phrase, as an argument under any verb (%s, %d): pre and
// post are the phrase's text before and after it, in the reader's
// language, which may put it elsewhere.
var elem elemMark

type elemMark struct{}

const elemText = "\x00"

func (elemMark) Format(f fmt.State, _ rune) { f.Write([]byte(elemText)) }

// pre is F(ctx, format, args...) up to elem (one of args).
func pre(ctx context.Context, format string, args ...any) string {
	s, _, _ := strings.Cut(F(ctx, format, args...), elemText)
	return s
}

// post is F(ctx, format, args...) after the last elem (one of args).
func post(ctx context.Context, format string, args ...any) string {
	s := F(ctx, format, args...)
	return s[strings.LastIndex(s, elemText)+1:]
}

// part is F(ctx, format, args...) after its i-th elem and before the
// next: part 0 is pre, the last is post.
func part(ctx context.Context, i int, format string, args ...any) string {
	parts := strings.Split(F(ctx, format, args...), elemText)
	if i >= len(parts) {
		return ""
	}
	return parts[i]
}

func i64(n int64) string                { return strconv.FormatInt(n, 10) }
func rfc(t time.Time) string            { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
func goodsURL(id int64) templ.SafeURL   { return templ.SafeURL("/goods/" + i64(id)) }
func slotURL(id int64) templ.SafeURL    { return templ.SafeURL("/slots/" + i64(id)) }
func adminSlot(id int64) templ.SafeURL  { return templ.SafeURL("/admin/slots/" + i64(id)) }
func adminGoods(id int64) templ.SafeURL { return templ.SafeURL("/admin/goods/" + i64(id)) }

// stockPercent is the remaining share of stock, 0–100, for the stock bar.
func stockPercent(remaining, stock int64) int64 {
	if stock <= 0 || remaining <= 0 {
		return 0
	}
	return min(100, remaining*100/stock)
}

func barStyle(remaining, stock int64) templ.SafeCSS {
	return templ.SafeCSS(fmt.Sprintf("width:%d%%", stockPercent(remaining, stock)))
}

// orderLabel is how an order's status reads to a shopper, with the reason
// when the durable unit guard failed it.
func orderLabel(o model.Order) string {
	switch o.Failure {
	case model.FailureSoldTwice:
		return "Failed: sold twice, nothing charged"
	case model.FailureRefundDue:
		return "Failed: sold twice, refund due"
	}
	return statusLabel(o.Status)
}

// statusLabel is how an order status reads to a shopper.
func statusLabel(status string) string {
	switch status {
	case model.OrderUnpaid:
		return "Awaiting payment"
	case model.OrderPaid:
		return "Paid"
	case model.OrderExpired:
		return "Expired"
	case model.OrderCancelled:
		return "Cancelled"
	case model.OrderFailed:
		return "Failed"
	case model.OrderRefunded:
		return "Refunded"
	}
	return status
}

func fieldErr(errs db.FieldErrors, name string) string { return errs[name] }

func driftClass(drift []string, name string) string {
	for _, d := range drift {
		if d == name {
			return "drift"
		}
	}
	return ""
}

func diffText(live, durable int64) string {
	if live == durable {
		return ""
	}
	return fmt.Sprintf("%+d", live-durable)
}

// lagText shows a delay in ms as seconds with one decimal ("0.4 s").
func lagText(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s" }
