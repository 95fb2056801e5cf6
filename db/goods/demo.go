package goods

import (
	"context"
	"time"

	"github.com/seckill/seckill/db/model"
)

// SeedDemo adds a live slot with a few goods and an upcoming slot,
// unless the merchant already has a slot that is live or to come.
func (s *Service) SeedDemo(ctx context.Context, m *model.User) error {
	var n int
	if err := s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM slots WHERE merchant_id = ? AND end_ms > ?`, m.ID, s.Now().UnixMilli()).Scan(&n); err != nil || n > 0 {
		return err
	}
	by := model.Claims{UserID: m.ID, Username: m.Username, Role: m.Role}
	now := s.Now().UTC().Truncate(time.Minute)
	slots := []struct {
		title      string
		start, end time.Time
		goods      []Input
	}{
		{"Flash sale: on now", now.Add(-5 * time.Minute), now.Add(3 * time.Hour), []Input{
			{Title: "Noise-cancelling headphones", Description: new("Over-ear, 30 hours of battery."), PriceCents: 129900, SeckillPriceCents: 49900, Stock: 20},
			{Title: "Mechanical keyboard", Description: new("Hot-swappable, brown switches."), PriceCents: 59900, SeckillPriceCents: 19900, Stock: 50, LimitPerUser: 2},
			{Title: "Espresso beans, 1 kg", Description: new("Medium roast, fresh this week."), PriceCents: 16800, SeckillPriceCents: 6800, Stock: 100, LimitPerUser: 3},
			{Title: "Smart watch", Description: new("Only five at this price."), PriceCents: 199900, SeckillPriceCents: 99900, Stock: 5},
		}},
		{"Flash sale: coming up", now.Add(30 * time.Minute), now.Add(150 * time.Minute), []Input{
			{Title: "4K monitor, 27 inch", Description: new("IPS panel, USB-C."), PriceCents: 259900, SeckillPriceCents: 149900, Stock: 10},
			{Title: "Running shoes", Description: new("Light, all sizes."), PriceCents: 79900, SeckillPriceCents: 29900, Stock: 30},
			// The fair sales: join the waiting room or enter the draw before the start.
			{Title: "Limited sneakers", Description: new("Sold through a waiting room: join before the start for a random place."),
				PriceCents: 24900, SeckillPriceCents: 9900, Stock: 10, Mode: new(model.ModeQueue), QueueRate: new(2)},
			{Title: "Game console bundle", Description: new("Sold by a raffle: enter before the start; the draw is public."),
				PriceCents: 59900, SeckillPriceCents: 29900, Stock: 3, Mode: new(model.ModeRaffle)},
		}},
	}
	for _, sl := range slots {
		slot, err := s.CreateSlot(ctx, by, SlotInput{Title: sl.title, StartAt: sl.start, EndAt: sl.end})
		if err != nil {
			return err
		}
		for _, g := range sl.goods {
			g.SlotID = slot.ID
			if _, err := s.Create(ctx, by, g); err != nil {
				return err
			}
		}
	}
	return nil
}
