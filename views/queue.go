package views

import (
	"context"
	"strconv"

	"github.com/seckill/seckill/db/model"
)

// QueueView is a goods' waiting room for a signed-in shopper: their
// ticket, nil before they join, and their orders of the goods.
type QueueView struct {
	Goods  model.Goods
	Ticket *model.Ticket
	// Orders are the shopper's orders of the goods (any state).
	Orders []model.Order
}

// held is how many units of the goods the shopper holds (unpaid or paid orders).
func (v QueueView) held() int64 { return HeldByGoods(v.Orders)[v.Goods.ID] }

// full tells whether the shopper holds as many units as one customer may:
// the room has nothing more for them.
func (v QueueView) full() bool { return v.Goods.LimitPerUser > 0 && v.held() >= v.Goods.LimitPerUser }

// heldOrder is the shopper's latest order of the goods still held (nil: none).
func (v QueueView) heldOrder() *model.Order {
	var o *model.Order
	for i := range v.Orders {
		x := &v.Orders[i]
		if x.GoodsID == v.Goods.ID && (x.Status == model.OrderUnpaid || x.Status == model.OrderPaid) && (o == nil || x.ID > o.ID) {
			o = x
		}
	}
	return o
}

// canJoin tells whether the Join button is offered: to one not in the
// line, or whose turn passed unused while the room is open, and who may
// still buy.
func (v QueueView) canJoin() bool {
	return !v.full() && (v.Ticket == nil || v.Ticket.Lapsed)
}

// admitted tells whether the shopper's turn is on and they may still grab.
func (v QueueView) admitted() bool {
	return !v.full() && v.Ticket != nil && v.Ticket.State == model.TicketAdmitted
}

// waiting tells whether the shopper waits in line (and may still buy).
func (v QueueView) waiting() bool {
	return !v.full() && v.Ticket != nil && v.Ticket.State == model.TicketWaiting
}

// placed tells whether a waiting shopper's place is fixed (the start has
// passed); before it places are drawn at random, so none is shown.
func (v QueueView) placed() bool { return v.Ticket != nil && v.Ticket.Place > 0 }

// queueStateText is how the shopper's standing reads on the page.
func queueStateText(v QueueView) string {
	t := v.Ticket
	switch {
	case v.full():
		return "You got it"
	case t == nil:
		return "Not in the queue"
	case t.State == model.TicketAdmitted:
		return "Your turn"
	case t.State == model.TicketClosed && t.Lapsed:
		return "Your turn passed"
	case t.State == model.TicketClosed:
		return "Closed"
	}
	return "Waiting"
}

// queueNextText says what happens next, in the reader's language.
func queueNextText(ctx context.Context, v QueueView) string {
	g, t := v.Goods, v.Ticket
	switch {
	case v.full():
		return T(ctx, "You hold as many of these as one customer may. Your orders are in My orders.")
	case t == nil:
		return T(ctx, "Join the queue: everyone who joins before the sale starts gets a random place at the start; later shoppers queue behind in the order they arrive.")
	case t.State == model.TicketClosed && t.Lapsed:
		return T(ctx, "Your turn passed unused. Join again to take a place at the back of the line.")
	case t.State == model.TicketClosed:
		return T(ctx, "The queue is closed: every unit has gone or the sale is over. If units come back, the queue opens again.")
	case t.State == model.TicketAdmitted:
		return T(ctx, "It is your turn: grab before your admission runs out.")
	case g.State == model.SlotUpcoming || t.Place == 0:
		return F(ctx, "Keep this page open. At the start everyone in the queue is put in a random order; then shoppers are let in at %s. This page lights the Grab button when it is your turn.", queueRateText(ctx, g))
	}
	return F(ctx, "Keep this page open: shoppers are let in at %s, and this page lights the Grab button when it is your turn.", queueRateText(ctx, g))
}

func queueRateText(ctx context.Context, g model.Goods) string {
	if g.QueueRate <= 0 {
		return T(ctx, "the pace the shop can serve")
	}
	return F(ctx, "%s a second", strconv.Itoa(g.QueueRate))
}

// etaText is a wait in words: "about 2 min 5 s".
func etaText(ctx context.Context, secs int64) string {
	switch {
	case secs <= 0:
		return T(ctx, "any moment")
	case secs < 60:
		return F(ctx, "about %s s", i64(secs))
	}
	return F(ctx, "about %s min %s s", i64(secs/60), i64(secs%60))
}

func ticketPosition(t *model.Ticket) string {
	if t == nil || t.State != model.TicketWaiting {
		return "–"
	}
	return i64(t.Position)
}

func ticketETA(ctx context.Context, t *model.Ticket) string {
	if t == nil || t.State != model.TicketWaiting {
		return ""
	}
	return etaText(ctx, t.ETASeconds)
}

// queueStanding is the shopper's standing as static/queue.js names it:
// won (holding as many as one may), none, waiting, admitted, lapsed or closed.
func queueStanding(v QueueView) string {
	t := v.Ticket
	switch {
	case v.full():
		return "won"
	case t == nil:
		return "none"
	case t.State == model.TicketClosed && t.Lapsed:
		return "lapsed"
	}
	return t.State
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func queueURL(id int64) string { return "/goods/" + i64(id) + "/queue" }

// queued tells whether goods are sold through a waiting room.
func queued(g model.Goods) bool { return g.Mode == model.ModeQueue }

// queueBadge is the badge colour of the shopper's standing.
func queueBadge(v QueueView) string {
	switch {
	case v.full():
		return "live"
	case v.Ticket == nil:
		return "ended"
	case v.Ticket.State == model.TicketAdmitted:
		return "live"
	case v.Ticket.State == model.TicketWaiting:
		return "upcoming"
	}
	return "ended"
}

// joinLabel is the Join button's label: again, for one whose turn passed.
func joinLabel(t *model.Ticket) string {
	if t != nil && t.Lapsed {
		return "Join again"
	}
	return "Join the queue"
}
