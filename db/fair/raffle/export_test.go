package raffle

import "context"

// Doors into the raffle's steps for its own behaviour tests (package
// raffle_test). Compiled only into this package's tests.

// PassOn runs the pass-on of the user's ended order in the raffle of goods, as SettleRaffle does when it finds it ended.
func (s *Raffles) PassOn(ctx context.Context, goodsID, userID, orderID int64) error {
	g, err := s.Goods.GoodsRow(ctx, goodsID)
	if err != nil {
		return err
	}
	return s.passOn(ctx, g, userID, orderID)
}

// MakeRaffleOrder runs the making of a won entry's order, as SettleRaffle does for an entry without one.
func (s *Raffles) MakeRaffleOrder(ctx context.Context, goodsID, userID, place int64) error {
	g, err := s.Goods.GoodsRow(ctx, goodsID)
	if err != nil {
		return err
	}
	return s.raffleOrder(ctx, g, userID, place)
}
