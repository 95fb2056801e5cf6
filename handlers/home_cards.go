package handlers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

// homeCards are the front page's red packet and coupon cards, held in
// memory: read again from their services only when a live event of a red
// packet or coupon, or a catalog change, was heard since (Observe), or a
// card's window opened or closed; and then at most once per cardsFresh, so
// a burst of events costs a read per cardsFresh. How stale they may be:
// cardsFresh after the event that told of the change.
type homeCards struct {
	heard atomic.Uint64 // events heard that may change a card

	mu       sync.Mutex
	loaded   bool
	seen     uint64    // heard when they were last read
	at       time.Time // when they were last read
	until    time.Time // the next time a card's window opens or closes
	seq      uint64    // bumped by every read that found them changed
	packets  []views.RedPacketCard
	coupons  []*model.Coupon
	snapshot string // what they were, to tell a change
}

// cardsFresh is the least time between two reads of the cards.
const cardsFresh = 100 * time.Millisecond

// Observe takes one live event as this process received it (web/wshub's
// Observe): one of a red packet, a coupon or the catalog may change a card.
func (h *Site) Observe(topic string, _ []byte) {
	if topic == "" || topic == "catalog" || strings.HasPrefix(topic, "redpacket:") || strings.HasPrefix(topic, "coupon:") {
		h.homeCards().heard.Add(1)
	}
}

func (h *Site) homeCards() *homeCards {
	h.cardsOnce.Do(func() { h.cards = &homeCards{} })
	return h.cards
}

// get returns the cards and their sequence number (which changes with them),
// read again when something may have changed them.
func (c *homeCards) get(ctx context.Context, sh Shelves, now time.Time) ([]views.RedPacketCard, []*model.Coupon, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	heard := c.heard.Load()
	due := !c.loaded || ((heard != c.seen || !now.Before(c.until)) && now.Sub(c.at) >= cardsFresh)
	if !due {
		return c.packets, c.coupons, c.seq, nil
	}
	packets, err := sh.RedPackets.Active(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	coupons, err := sh.Coupons.List(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	c.loaded, c.seen, c.at = true, heard, now
	c.until = now.Add(time.Hour)
	for _, p := range packets {
		if p.ExpiresAt.After(now) && p.ExpiresAt.Before(c.until) {
			c.until = p.ExpiresAt
		}
	}
	for _, cp := range coupons {
		for _, t := range []time.Time{cp.GrabStartAt, cp.GrabEndAt} {
			if t.After(now) && t.Before(c.until) {
				c.until = t
			}
		}
	}
	cards := redPacketCards(packets)
	if snap := cardsSnapshot(cards, coupons); snap != c.snapshot {
		c.snapshot = snap
		c.seq++
	}
	c.packets, c.coupons = cards, coupons
	return c.packets, c.coupons, c.seq, nil
}

// cardsSnapshot is the cards' content as a string, to tell whether a read changed them.
func cardsSnapshot(packets []views.RedPacketCard, coupons []*model.Coupon) string {
	var b strings.Builder
	for _, p := range packets {
		b.WriteString(fmtAny(p))
	}
	b.WriteByte('|')
	for _, c := range coupons {
		b.WriteString(fmtAny(*c))
	}
	return b.String()
}

func fmtAny(v any) string { return fmt.Sprintf("%+v;", v) }
