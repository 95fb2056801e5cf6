package db

import (
	"context"

	"github.com/seckill/seckill/db/model"
)

// The demo shopper that DEMO=true creates, printed at start.
const (
	DemoShopper         = "shopper"
	DemoShopperPassword = "shopper123"
)

// SeedDemo fills an empty database with something to try: a shopper account
// and each promotion's demo items. Every step leaves existing data alone.
func (s *Store) SeedDemo(ctx context.Context) error {
	if _, err := s.CreateUser(ctx, DemoShopper, DemoShopperPassword, model.RoleUser); err != nil && ErrorCode(err) != ECONFLICT {
		return err
	}
	if err := s.seedGoodsDemo(ctx); err != nil {
		return err
	}
	if err := s.SeedRedPacketDemo(ctx); err != nil {
		return err
	}
	if err := s.SeedDemoCoupons(ctx); err != nil {
		return err
	}
	return nil
}
