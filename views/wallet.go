package views

import "github.com/seckill/seckill/db/model"

// WalletView is "My wallet": the shopper's red packet winnings and the
// coupons they claimed.
type WalletView struct {
	Winnings []model.RedPacketWinning
	Coupons  []*model.UserCoupon
}

// TotalCents is the sum of the winnings.
func (v WalletView) TotalCents() int64 {
	var sum int64
	for _, w := range v.Winnings {
		sum += w.AmountCents
	}
	return sum
}
