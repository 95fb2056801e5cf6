package redpacket

import (
	"context"
	"fmt"
	"time"

	"github.com/seckill/seckill/db/model"
)

// demoTitle names the demo red packet.
const demoTitle = "Welcome red packet"

// SeedDemo makes sure a shopper can open a red packet: it loads packets an
// embedded Redis lost at restart, then creates an active demo packet of the
// merchant's unless one with at least an hour to go already exists.
func (s *Service) SeedDemo(ctx context.Context, merchant *model.User) error {
	if err := s.Sweep(ctx); err != nil {
		return fmt.Errorf("sweep red packets: %w", err)
	}
	var n int
	err := s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM redpackets WHERE owner_id = ? AND title = ? AND status = ? AND expires_ms > ?`,
		merchant.ID, demoTitle, model.RedPacketActive, s.Now().Add(time.Hour).UnixMilli()).Scan(&n)
	if err != nil || n > 0 {
		return err
	}
	_, err = s.Create(ctx, merchant.ID, model.NewRedPacket{Title: demoTitle, TotalCents: 8888, Count: 20, Mode: model.RedPacketRandom, ExpiresIn: new("24h")})
	return err
}
