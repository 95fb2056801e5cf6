package goods

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
)

// windowScript moves loaded goods' window: the start to ARGV[1] and the end
// to ARGV[2] when that is earlier (a window is only ever shortened here, so a
// late call never reopens a sale that was ended), and sets whether it is
// hidden to ARGV[3].
//
// KEYS: 1 info
// ARGV: 1 start ms, 2 end ms, 3 hidden (hiddenFlag)
// Returns ok, or not_loaded when the goods is not in Redis (nothing changed).
var windowScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_loaded' end
local e = tonumber(ARGV[2])
if e < tonumber(redis.call('HGET', KEYS[1], 'end')) then redis.call('HSET', KEYS[1], 'end', ARGV[2]) end
redis.call('HSET', KEYS[1], 'start', ARGV[1], 'hidden', ARGV[3])
redis.call('HINCRBY', KEYS[1], 'back', 1) -- see refusals.go
return 'ok'
`)

// pushWindow gives Redis the goods' window as the store now says it, in every bucket.
func (s *Service) pushWindow(ctx context.Context, g *model.Goods) error {
	bs, err := s.BucketsOfGoods(ctx, g.ID)
	if err != nil {
		return err
	}
	for _, b := range bs {
		if err := windowScript.Run(ctx, s.Redis, []string{sale.InfoKey(b)}, g.StartAt.UnixMilli(), g.EndAt.UnixMilli(), sale.HiddenFlag(g)).Err(); err != nil {
			return fmt.Errorf("move the window of goods %d: %w", g.ID, err)
		}
	}
	s.SaleChanged(ctx, g.ID)
	return nil
}

// StateEvent is the live event of goods whose sale its merchant ended or hid.
type StateEvent struct {
	Type    string `json:"type"` // "goods_state"
	GoodsID int64  `json:"goods_id"`
	SlotID  int64  `json:"slot_id"`
	State   string `json:"state"` // model.SlotEnded, or "hidden"
}

func (s *Service) pushState(ctx context.Context, g *model.Goods, state string) {
	ev := StateEvent{Type: "goods_state", GoodsID: g.ID, SlotID: g.SlotID, State: state}
	for _, topic := range []string{live.TopicGoods(g.ID), live.TopicSlot(g.SlotID)} {
		if err := s.Events.Publish(ctx, topic, ev); err != nil {
			s.Log.Warn("publish goods state", "goods", g.ID, "err", err)
		}
	}
}

// EndGoods ends the sale of goods of the caller's now: its window closes in
// the store and in Redis, and watchers see it ended. Ending goods that has
// ended already is a conflict.
func (s *Service) EndGoods(ctx context.Context, by model.Claims, id int64) (_ *model.Goods, err error) {
	defer s.announce(ctx, &err)
	g, err := s.Owned(ctx, by, id)
	if err != nil {
		return nil, err
	}
	if g.State == model.SlotEnded {
		return nil, db.Errorf(db.ECONFLICT, "the sale of goods %d is over already", id)
	}
	now := s.Now().UnixMilli()
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE goods SET ended_ms = ? WHERE id = ? AND ended_ms IS NULL`, now, id)
	if err != nil {
		return nil, fmt.Errorf("end goods %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, db.Errorf(db.ECONFLICT, "the sale of goods %d is over already", id)
	}
	if g, err = s.GoodsRow(ctx, id); err != nil {
		return nil, err
	}
	if err := s.pushWindow(ctx, g); err != nil {
		return nil, err
	}
	s.pushState(ctx, g, model.SlotEnded)
	return s.Get(ctx, id)
}

// EndSlot ends the sale of a slot of the caller's now, for all its goods.
func (s *Service) EndSlot(ctx context.Context, by model.Claims, id int64) (_ *model.Slot, err error) {
	defer s.announce(ctx, &err)
	sl, err := s.OwnedSlot(ctx, by, id)
	if err != nil {
		return nil, err
	}
	if sl.State == model.SlotEnded {
		return nil, db.Errorf(db.ECONFLICT, "slot %d is over already", id)
	}
	// The window ends now; a slot that had not opened yet gets a window of
	// its last millisecond (the store wants end after start), so it reads ended.
	now := s.Now().UnixMilli()
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE slots SET ended_ms = ?1, end_ms = ?1,
		start_ms = CASE WHEN start_ms < ?1 THEN start_ms ELSE ?1 - 1 END WHERE id = ?2 AND end_ms > ?1`, now, id)
	if err != nil {
		return nil, fmt.Errorf("end slot %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, db.Errorf(db.ECONFLICT, "slot %d is over already", id)
	}
	gs, err := s.SlotGoodsRows(ctx, id)
	if err != nil {
		return nil, err
	}
	for i := range gs {
		if err := s.pushWindow(ctx, &gs[i]); err != nil {
			return nil, err
		}
		s.pushState(ctx, &gs[i], model.SlotEnded)
	}
	sl, err = s.Slot(ctx, id)
	if err != nil {
		return nil, err
	}
	s.scheduleSlotSync(ctx, sl)
	return sl, nil
}

// SetGoodsHidden hides goods of the caller's from shoppers, or shows it again.
func (s *Service) SetGoodsHidden(ctx context.Context, by model.Claims, id int64, hidden bool) (_ *model.Goods, err error) {
	defer s.announce(ctx, &err)
	if _, err := s.Owned(ctx, by, id); err != nil {
		return nil, err
	}
	if _, err := s.SQL.W.ExecContext(ctx, `UPDATE goods SET hidden = ? WHERE id = ?`, flag(hidden), id); err != nil {
		return nil, fmt.Errorf("hide goods %d: %w", id, err)
	}
	g, err := s.GoodsRow(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.pushWindow(ctx, g); err != nil {
		return nil, err
	}
	if !g.Listed() {
		s.pushState(ctx, g, "hidden")
	}
	return s.Get(ctx, id)
}

// SetSlotHidden hides a slot of the caller's, and so all its goods, from
// shoppers, or shows it again.
func (s *Service) SetSlotHidden(ctx context.Context, by model.Claims, id int64, hidden bool) (_ *model.Slot, err error) {
	defer s.announce(ctx, &err)
	if _, err := s.OwnedSlot(ctx, by, id); err != nil {
		return nil, err
	}
	if _, err := s.SQL.W.ExecContext(ctx, `UPDATE slots SET hidden = ? WHERE id = ?`, flag(hidden), id); err != nil {
		return nil, fmt.Errorf("hide slot %d: %w", id, err)
	}
	gs, err := s.SlotGoodsRows(ctx, id)
	if err != nil {
		return nil, err
	}
	for i := range gs {
		if err := s.pushWindow(ctx, &gs[i]); err != nil {
			return nil, err
		}
		if !gs[i].Listed() {
			s.pushState(ctx, &gs[i], "hidden")
		}
	}
	return s.Slot(ctx, id)
}

func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ShopperGoods returns goods as the caller may see it: hidden goods (or
// goods of a hidden slot) is not found, except by its owner and admins.
func (s *Service) ShopperGoods(ctx context.Context, by model.Claims, id int64) (*model.Goods, error) {
	g, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !g.Listed() && !sale.Owns(by, g.MerchantID) {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", id)
	}
	return g, nil
}

// ShopperSlot returns a slot as the caller may see it (see ShopperGoods).
func (s *Service) ShopperSlot(ctx context.Context, by model.Claims, id int64) (*model.Slot, error) {
	sl, err := s.Slot(ctx, id)
	if err != nil {
		return nil, err
	}
	if sl.Hidden && !sale.Owns(by, sl.MerchantID) {
		return nil, db.Errorf(db.ENOTFOUND, "slot %d not found", id)
	}
	return sl, nil
}

// ShopperSlotGoods lists the goods of a slot the caller may see (see
// ShopperGoods): a hidden slot is not found, hidden goods are left out.
func (s *Service) ShopperSlotGoods(ctx context.Context, by model.Claims, slotID int64) ([]model.Goods, error) {
	if _, err := s.ShopperSlot(ctx, by, slotID); err != nil {
		return nil, err
	}
	gs, err := s.SlotGoods(ctx, slotID)
	if err != nil {
		return nil, err
	}
	out := gs[:0]
	for _, g := range gs {
		if g.Listed() || sale.Owns(by, g.MerchantID) {
			out = append(out, g)
		}
	}
	return out, nil
}

// MerchantSales returns the caller's live and upcoming slots (newest
// first), each with its goods' figures and their totals, for the dashboard.
func (s *Service) MerchantSales(ctx context.Context, by model.Claims) ([]model.SlotSales, error) {
	slots, err := s.MerchantSlots(ctx, by)
	if err != nil {
		return nil, err
	}
	out := []model.SlotSales{}
	for _, sl := range slots {
		if sl.State == model.SlotEnded || sl.Rehearsal { // a rehearsal's figures are not the shop's revenue
			continue
		}
		_, sales, err := s.SlotSales(ctx, by, sl.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, SlotSalesOf(sl, sales))
	}
	return out, nil
}

// SlotSalesOf sums the goods' figures of a slot.
func SlotSalesOf(sl model.Slot, sales []model.GoodsSales) model.SlotSales {
	ss := model.SlotSales{Slot: sl, Goods: sales}
	for _, g := range sales {
		ss.Totals.Add(g.Stats)
	}
	return ss
}
