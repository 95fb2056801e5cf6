package sale

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// MsTime reads a unix-millisecond column as a UTC time.
func MsTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// Owns reports whether the caller may see and change an item of merchantID.
func Owns(by model.Claims, merchantID int64) bool {
	return by.Role == model.RoleAdmin || by.UserID == merchantID
}

const slotColumns = `id, merchant_id, title, start_ms, end_ms, ended_ms, hidden, rehearsal`

func (s *Sale) scanSlot(row interface{ Scan(...any) error }) (*model.Slot, error) {
	var sl model.Slot
	var start, end int64
	var ended sql.NullInt64
	if err := row.Scan(&sl.ID, &sl.MerchantID, &sl.Title, &start, &end, &ended, &sl.Hidden, &sl.Rehearsal); err != nil {
		return nil, err
	}
	sl.StartAt, sl.EndAt, sl.EndedEarly = MsTime(start), MsTime(end), ended.Valid
	sl.State = SlotState(s.Now(), sl.StartAt, sl.EndAt)
	return &sl, nil
}

func (s *Sale) QuerySlots(ctx context.Context, where string, args ...any) ([]model.Slot, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+slotColumns+` FROM slots WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []model.Slot{}
	for rows.Next() {
		sl, err := s.scanSlot(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *sl)
	}
	return out, rows.Err()
}

// Slot returns one slot.
func (s *Sale) Slot(ctx context.Context, id int64) (*model.Slot, error) {
	sl, err := s.scanSlot(s.SQL.R.QueryRowContext(ctx, `SELECT `+slotColumns+` FROM slots WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, db.Errorf(db.ENOTFOUND, "slot %d not found", id)
	}
	return sl, err
}

func (s *Sale) OwnedSlot(ctx context.Context, by model.Claims, id int64) (*model.Slot, error) {
	sl, err := s.Slot(ctx, id)
	if err != nil {
		return nil, err
	}
	if !Owns(by, sl.MerchantID) {
		return nil, db.Errorf(db.ENOTFOUND, "slot %d not found", id)
	}
	return sl, nil
}

const goodsColumns = `g.id, g.slot_id, g.merchant_id, g.title, g.description, g.price_cents, g.seckill_price_cents,
	g.stock, g.limit_per_user, g.shards, g.remaining, s.start_ms, s.end_ms, g.ended_ms, g.hidden, s.hidden, g.image,
	g.pow_bits, g.preregistered_only, g.mode, g.queue_rate, g.admission_seconds, g.entry_start_ms, s.rehearsal`

// QueryGoods lists goods rows (joined to their slots as g and s) that match where, without live stock.
func (s *Sale) QueryGoods(ctx context.Context, where string, args ...any) ([]model.Goods, error) {
	return s.queryGoods(ctx, where, args...)
}

func (s *Sale) queryGoods(ctx context.Context, where string, args ...any) ([]model.Goods, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+goodsColumns+` FROM goods g JOIN slots s ON s.id = g.slot_id WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []model.Goods{}
	now := s.Now()
	for rows.Next() {
		var g model.Goods
		var start, end int64
		var ended, entryStart sql.NullInt64
		var image string
		if err := rows.Scan(&g.ID, &g.SlotID, &g.MerchantID, &g.Title, &g.Description, &g.PriceCents, &g.SeckillPriceCents,
			&g.Stock, &g.LimitPerUser, &g.Shards, &g.Remaining, &start, &end, &ended, &g.Hidden, &g.SlotHidden, &image,
			&g.PowBits, &g.PreregisteredOnly, &g.Mode, &g.QueueRate, &g.AdmissionSeconds, &entryStart, &g.Rehearsal); err != nil {
			return nil, err
		}
		// Goods ended early closes before its slot: its window ends then
		// (and, ended before it opened, starts then too, so it reads ended).
		if ended.Valid && ended.Int64 < end {
			end, g.EndedEarly = ended.Int64, true
		}
		start = min(start, end)
		g.StartAt, g.EndAt = MsTime(start), MsTime(end)
		g.ImageURL = ImageURL(image)
		if entryStart.Valid {
			t := MsTime(entryStart.Int64)
			g.EntryStartAt = &t
		}
		g.State = SlotState(now, g.StartAt, g.EndAt)
		out = append(out, g)
	}
	return out, rows.Err()
}

// GoodsRow returns the goods as the store holds it, without the live remaining.
func (s *Sale) GoodsRow(ctx context.Context, id int64) (*model.Goods, error) {
	gs, err := s.queryGoods(ctx, `g.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", id)
	}
	return &gs[0], nil
}

// Owned returns goods the caller may manage, with live remaining stock.
func (s *Sale) Owned(ctx context.Context, by model.Claims, id int64) (*model.Goods, error) {
	g, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !Owns(by, g.MerchantID) {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", id)
	}
	return g, nil
}

// DurableCountsOf is durableCounts of the goods' orders with IDs lo..hi (one bucket's).
func (s *Sale) DurableCountsOf(ctx context.Context, goodsID, lo, hi int64) (model.GoodsDBStats, error) {
	var c model.GoodsDBStats
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT 0, status, COUNT(*), COALESCE(SUM(amount_cents), 0), COALESCE(SUM(discount_cents), 0) FROM orders WHERE goods_id = ?1 AND id BETWEEN ?2 AND ?3 GROUP BY status
		UNION ALL SELECT 1, status, COUNT(*), 0, 0 FROM order_conflicts WHERE goods_id = ?1 AND id BETWEEN ?2 AND ?3 GROUP BY status`, goodsID, lo, hi)
	if err != nil {
		return c, err
	}
	defer rows.Close()
	for rows.Next() {
		var refused bool
		var status string
		var n, sum, discount int64
		if err := rows.Scan(&refused, &status, &n, &sum, &discount); err != nil {
			return c, err
		}
		switch {
		case status == model.OrderUnpaid && !refused:
			c.Unpaid = n
		case status == model.OrderPaid && !refused:
			c.Paid, c.RevenueCents, c.DiscountCents = n, sum, discount
		case status == model.OrderExpired:
			c.Expired += n
		case status == model.OrderCancelled:
			c.Cancelled += n
		case status == model.OrderFailed:
			c.Failed += n
		}
	}
	return c, rows.Err()
}

// Get returns one goods with its live remaining stock.
func (s *Sale) Get(ctx context.Context, id int64) (*model.Goods, error) {
	g, err := s.GoodsRow(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.FillRemaining(ctx, []*model.Goods{g}); err != nil {
		return nil, err
	}
	return g, nil
}

// SlotGoods lists the goods of a slot with live remaining stock.
func (s *Sale) SlotGoods(ctx context.Context, slotID int64) ([]model.Goods, error) {
	if _, err := s.Slot(ctx, slotID); err != nil {
		return nil, err
	}
	gs, err := s.SlotGoodsRows(ctx, slotID)
	if err != nil {
		return nil, err
	}
	ptrs := make([]*model.Goods, len(gs))
	for i := range gs {
		ptrs[i] = &gs[i]
	}
	return gs, s.FillRemaining(ctx, ptrs)
}

// FillRemaining replaces the store's remaining with Redis's for goods loaded
// there, in one round trip (two when a goods' bucket count changed since it
// was read). A figure is the sum over every bucket of the goods, never a
// part of it: after the buckets the same round trip reads the count again
// from bucket 0 (loaded last, so a goods whose bucket 0 is there has all of
// them), and a goods whose count is not the one its buckets were read by is
// read once more by the new count.
func (s *Sale) FillRemaining(ctx context.Context, gs []*model.Goods) error {
	if len(gs) == 0 {
		return nil
	}
	ids := make([]int64, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	shards, err := s.ShardsOf(ctx, false, ids...)
	if err != nil {
		return err
	}
	for try := 0; ; try++ {
		pipe := s.Redis.Pipeline()
		fresh := make([][]*redis.StringCmd, len(gs))
		free := make([][]*redis.IntCmd, len(gs))
		count := make([]*redis.StringCmd, len(gs))
		for i, g := range gs {
			for _, b := range BucketsOf(g.ID, shards[g.ID]) {
				fresh[i] = append(fresh[i], pipe.Get(ctx, FreshKey(b)))
				free[i] = append(free[i], pipe.LLen(ctx, FreeKey(b)))
			}
			count[i] = pipe.HGet(ctx, InfoKey(Bucket0(g.ID)), "shards")
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("read remaining stock: %w", err)
		}
		var again []int64
		for i, g := range gs {
			sum, loaded := int64(0), true
			for j := range fresh[i] {
				n, err := fresh[i][j].Int64()
				loaded = loaded && err == nil
				sum += n + free[i][j].Val()
			}
			if k, err := count[i].Int(); loaded && err == nil && max(k, 1) != shards[g.ID] {
				s.shards.forget(g.ID)
				again = append(again, g.ID)
				continue // read by another count than the goods has: not its sum
			}
			if loaded {
				g.Remaining = sum
			}
		}
		if len(again) == 0 || try > 0 {
			return nil
		}
		if shards, err = s.ShardsOf(ctx, false, again...); err != nil {
			return err
		}
		var left []*model.Goods
		for _, g := range gs {
			if _, ok := shards[g.ID]; ok {
				left = append(left, g)
			}
		}
		gs = left
	}
}

func (s *Sale) SlotGoodsRows(ctx context.Context, slotID int64) ([]model.Goods, error) {
	return s.queryGoods(ctx, `g.slot_id = ? ORDER BY g.id`, slotID)
}

// HiddenFlag is the goods' hidden field in Redis ("1": shoppers may not
// see it, and its grabs are refused as not found; "0": listed).
func HiddenFlag(g *model.Goods) string {
	if g.Listed() {
		return "0"
	}
	return "1"
}

// ImagePath is where pictures are served; a picture's URL is ImagePath and its hash.
const ImagePath = "/images/"

// ImageURL is the content-addressed URL of the picture with this hash ("" for none).
func ImageURL(hash string) string {
	if hash == "" {
		return ""
	}
	return ImagePath + hash
}
