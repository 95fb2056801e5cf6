package goods

import (
	"context"
	"embed"
	"time"

	"github.com/seckill/seckill/db/model"
)

// demoPictures are the demo goods' pictures, drawn for the project (SVG).
//
//go:embed demopics/*.svg
var demoPictures embed.FS

// demoGoods is a demo goods and the name of its picture in demopics.
type demoGoods struct {
	Input
	picture string
}

// SeedDemo adds a live slot with a few goods and an upcoming slot,
// unless the merchant already has a slot that is live or to come. The
// demo's words are in English and Chinese both (a merchant's own are in
// the language they type); each goods has a picture of its own.
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
		goods      []demoGoods
	}{
		{"Flash sale: on now · 秒杀进行中", now.Add(-5 * time.Minute), now.Add(3 * time.Hour), []demoGoods{
			{Input{Title: "Noise-cancelling headphones · 降噪耳机", Description: new("Over-ear, 30 hours of battery. 头戴式，续航 30 小时。"), PriceCents: 129900, SeckillPriceCents: 49900, Stock: 20}, "headphones.svg"},
			{Input{Title: "Mechanical keyboard · 机械键盘", Description: new("Hot-swappable, brown switches. 热插拔，茶轴。"), PriceCents: 59900, SeckillPriceCents: 19900, Stock: 50, LimitPerUser: 2}, "keyboard.svg"},
			{Input{Title: "Espresso beans, 1 kg · 意式咖啡豆 1 千克", Description: new("Medium roast, fresh this week. 中度烘焙，本周新鲜烘出。"), PriceCents: 16800, SeckillPriceCents: 6800, Stock: 100, LimitPerUser: 3}, "coffee.svg"},
			{Input{Title: "Smart watch · 智能手表", Description: new("Only five at this price. 此价仅 5 件。"), PriceCents: 199900, SeckillPriceCents: 99900, Stock: 5}, "watch.svg"},
		}},
		{"Flash sale: coming up · 即将开抢", now.Add(30 * time.Minute), now.Add(150 * time.Minute), []demoGoods{
			{Input{Title: "4K monitor, 27 inch · 27 英寸 4K 显示器", Description: new("IPS panel, USB-C. IPS 屏，USB-C 接口。"), PriceCents: 259900, SeckillPriceCents: 149900, Stock: 10}, "monitor.svg"},
			{Input{Title: "Running shoes · 跑鞋", Description: new("Light, all sizes. 轻便，尺码齐全。"), PriceCents: 79900, SeckillPriceCents: 29900, Stock: 30}, "shoes.svg"},
			// The fair sales: join the waiting room or enter the draw before the start.
			{Input{Title: "Limited sneakers · 限量球鞋", Description: new("Sold through a waiting room: join before the start for a random place. 排队发售：开抢前加入，随机排定名次。"),
				PriceCents: 24900, SeckillPriceCents: 9900, Stock: 10, Mode: new(model.ModeQueue), QueueRate: new(2)}, "sneakers.svg"},
			{Input{Title: "Game console bundle · 游戏机套装", Description: new("Sold by a raffle: enter before the start; the draw is public. 抽签发售：开抢前报名，抽签过程公开可查。"),
				PriceCents: 59900, SeckillPriceCents: 29900, Stock: 3, Mode: new(model.ModeRaffle)}, "console.svg"},
		}},
	}
	for _, sl := range slots {
		slot, err := s.CreateSlot(ctx, by, SlotInput{Title: sl.title, StartAt: sl.start, EndAt: sl.end})
		if err != nil {
			return err
		}
		for _, dg := range sl.goods {
			g := dg.Input
			g.SlotID = slot.ID
			made, err := s.Create(ctx, by, g)
			if err != nil {
				return err
			}
			pic, err := demoPictures.ReadFile("demopics/" + dg.picture)
			if err != nil {
				return err
			}
			if err := s.setDemoPicture(ctx, made.ID, pic); err != nil {
				return err
			}
		}
	}
	return nil
}
