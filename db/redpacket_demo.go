package db

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill/seckill/db/model"
)

// redPacketDemoTitle names the demo red packet.
const redPacketDemoTitle = "Welcome red packet"

// SeedRedPacketDemo makes sure a shopper can open a red packet: it loads
// packets an embedded Redis lost at restart, then creates an active demo
// packet of owner's unless one with at least an hour to go already exists.
func (s *Store) SeedRedPacketDemo(ctx context.Context, owner *model.User) error {
	if err := s.SweepRedPackets(ctx); err != nil {
		return fmt.Errorf("sweep red packets: %w", err)
	}
	var n int
	err := s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM redpackets WHERE owner_id = ? AND title = ? AND status = ? AND expires_at > ?`,
		owner.ID, redPacketDemoTitle, RedPacketActive, formatRPTime(s.Now().Add(time.Hour))).Scan(&n)
	if err != nil || n > 0 {
		return err
	}
	_, err = s.CreateRedPacket(ctx, owner.ID, NewRedPacket{Title: redPacketDemoTitle, TotalCents: 8888, Count: 20, Mode: RedPacketRandom, ExpiresIn: "24h"})
	return err
}
