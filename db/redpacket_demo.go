package db

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill/seckill/db/model"
)

// The demo merchant that owns the demo red packet (DEMO=true).
const (
	redPacketDemoMerchant = "demo_merchant"
	redPacketDemoPassword = "merchant123"
	redPacketDemoTitle    = "Welcome red packet"
)

// SeedRedPacketDemo makes sure a shopper can open a red packet: it loads
// packets an embedded Redis lost at restart, then creates an active demo
// packet unless one with at least an hour to go already exists.
func (s *Store) SeedRedPacketDemo(ctx context.Context) error {
	owner, err := s.CreateUser(ctx, redPacketDemoMerchant, redPacketDemoPassword, model.RoleMerchant)
	if ErrorCode(err) == ECONFLICT {
		owner, err = s.userBy(ctx, `username = ?`, redPacketDemoMerchant)
	}
	if err != nil {
		return fmt.Errorf("demo merchant: %w", err)
	}
	if err := s.SweepRedPackets(ctx); err != nil {
		return fmt.Errorf("sweep red packets: %w", err)
	}
	var n int
	err = s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM redpackets WHERE owner_id = ? AND title = ? AND status = ? AND expires_at > ?`,
		owner.ID, redPacketDemoTitle, RedPacketActive, formatRPTime(s.Now().Add(time.Hour))).Scan(&n)
	if err != nil || n > 0 {
		return err
	}
	_, err = s.CreateRedPacket(ctx, owner.ID, NewRedPacket{Title: redPacketDemoTitle, TotalCents: 8888, Count: 20, Mode: RedPacketRandom, ExpiresIn: "24h"})
	return err
}
