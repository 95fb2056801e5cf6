package redpacket

import (
	"context"

	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/tasks"
)

// scheduleExpiry enqueues the packet's expiry. A failure is logged, not
// returned: the packet is live and the sweep expires overdue packets whose
// task never came.
func (s *Service) scheduleExpiry(ctx context.Context, p *model.RedPacket) {
	if s.Tasks == nil {
		return
	}
	if err := s.Schedule(ctx, tasks.NewRedPacketExpireTask(p.ID, p.ExpiresAt)); err != nil {
		s.Log.Warn("schedule red packet expiry", "redpacket", p.ID, "err", err)
	}
}
