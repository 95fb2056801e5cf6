package sale

import (
	"encoding/json"
	"strconv"

	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
)

// PushStock sends the goods' remaining stock to watchers of the goods and
// of its slot, given bucket b's remaining at version. With several buckets
// the event carries the sum over the buckets as this process last saw them
// (stockSums), at the newest version seen.
func (s *Sale) PushStock(b Bucket, slotID, remaining, version int64) {
	goodsID := b.Goods
	if b.K > 1 {
		if remaining > 0 { // a unit came back (or is left): the bucket's neighbours may take it again
			s.dry.clear(b)
		}
		var ok bool
		if remaining, version, ok = s.stock.add(b, remaining, version, s.bucketRemaining); !ok {
			return
		}
	}
	ev := StockEvent{Type: "stock", GoodsID: goodsID, Remaining: remaining, Version: version}
	if s.Stock != nil {
		s.Stock(ev)
	}
	s.Events.PublishCoalescedVersion(live.TopicGoods(goodsID), live.TopicGoods(goodsID), version, ev)
	if slotID > 0 {
		// Keyed by slot and goods: coalesced apart from the goods topic and from the slot's other goods.
		s.Events.PublishCoalescedVersion(live.TopicSlot(slotID), live.TopicSlot(slotID)+"/"+live.TopicGoods(goodsID), version, ev)
	}
}

// PushOrder sends the order to its owner. It is coalesced per order so it
// leaves the request path at once and a later change always arrives last.
// The event is encoded here, as encoding/json would encode an OrderEvent,
// without reflection: every winning grab sends one.
func (s *Sale) PushOrder(o *model.Order) {
	enc, err := o.MarshalJSON()
	if err != nil {
		s.Log.Warn("encode order event", "order", o.ID, "err", err)
		return
	}
	m := orderEvent(o, enc)
	s.Events.PublishCoalescedKey(m.Topic, "order:"+strconv.FormatInt(o.ID, 10), m.Event)
}

// orderEvent is the live event of order o to its owner, from the order's
// JSON enc (as o.MarshalJSON gives it): an OrderEvent as encoding/json
// would encode it.
func orderEvent(o *model.Order, enc []byte) live.Message {
	ev := make([]byte, 0, len(orderEventHead)+len(enc)+1)
	ev = append(append(append(ev, orderEventHead...), enc...), '}')
	return live.Message{Topic: live.TopicUser(o.UserID), Event: json.RawMessage(ev)}
}

const orderEventHead = `{"type":"order","order":`
