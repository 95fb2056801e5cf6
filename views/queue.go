package views

import (
	"strconv"

	"github.com/seckill/seckill/db/model"
)

// QueueView is a goods' waiting room for a signed-in shopper: their
// ticket, nil before they join.
type QueueView struct {
	Goods  model.Goods
	Ticket *model.Ticket
}

// queueStateText is how a ticket's state reads on the page.
func queueStateText(t *model.Ticket) string {
	if t == nil {
		return "Not in the queue"
	}
	switch t.State {
	case model.TicketAdmitted:
		return "Your turn"
	case model.TicketClosed:
		return "Closed"
	}
	return "Waiting"
}

// queueNextText says what happens next for a ticket.
func queueNextText(g model.Goods, t *model.Ticket) string {
	switch {
	case t == nil:
		return "Join the queue: everyone who joins before the sale starts gets a random place at the start; later shoppers queue behind in the order they arrive."
	case t.State == model.TicketClosed:
		return "The queue is closed: every unit has gone, the sale is over, or your turn passed unused (join again to take a place at the back). If units come back, the queue opens again."
	case t.State == model.TicketAdmitted:
		return "It is your turn: grab before your admission runs out."
	case g.State == model.SlotUpcoming:
		return "Keep this page open. At the start everyone in the queue is put in a random order; then shoppers are let in at " + queueRateText(g) + ". This page lights the Grab button when it is your turn."
	}
	return "Keep this page open: shoppers are let in at " + queueRateText(g) + ", and this page lights the Grab button when it is your turn."
}

func queueRateText(g model.Goods) string {
	if g.QueueRate <= 0 {
		return "the pace the shop can serve"
	}
	return strconv.Itoa(g.QueueRate) + " a second"
}

// etaText is a wait in words: "about 2 min 5 s".
func etaText(secs int64) string {
	switch {
	case secs <= 0:
		return "any moment"
	case secs < 60:
		return "about " + i64(secs) + " s"
	}
	return "about " + i64(secs/60) + " min " + i64(secs%60) + " s"
}

func ticketPosition(t *model.Ticket) string {
	if t == nil || t.State != model.TicketWaiting {
		return "–"
	}
	return i64(t.Position)
}

func ticketETA(t *model.Ticket) string {
	if t == nil || t.State != model.TicketWaiting {
		return ""
	}
	return etaText(t.ETASeconds)
}

func ticketState(t *model.Ticket) string {
	if t == nil {
		return "none"
	}
	return t.State
}

func queueURL(id int64) string { return "/goods/" + i64(id) + "/queue" }

// queued tells whether goods are sold through a waiting room.
func queued(g model.Goods) bool { return g.Mode == model.ModeQueue }

// ticketBadge is the badge colour of a ticket's state.
func ticketBadge(t *model.Ticket) string {
	switch ticketState(t) {
	case model.TicketAdmitted:
		return "live"
	case model.TicketWaiting:
		return "upcoming"
	}
	return "ended"
}
