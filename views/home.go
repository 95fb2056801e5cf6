package views

import "github.com/seckill/seckill/db/model"

// HomeView is what the front page sells: the live and upcoming slots with
// their goods, the red packets one may open and the coupons on now.
type HomeView struct {
	Sales      []HomeSlot
	Held       map[int64]int64 // the shopper's live orders per goods, for the cards' limit state
	RedPackets []RedPacketCard
	Coupons    []*model.Coupon
}

// HomeSlot is one slot on the front page with the goods shoppers may see.
type HomeSlot struct {
	Slot  model.Slot
	Goods []model.Goods
}

// homeStateText is how a goods' state reads on a front page card.
func homeStateText(state string) string {
	switch state {
	case GrabUpcoming:
		return "Upcoming"
	case GrabLive, GrabLimitReached:
		return "On sale"
	case GrabSoldOut:
		return "Sold out"
	}
	return "Ended"
}
