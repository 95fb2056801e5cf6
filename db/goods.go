package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/model"
)

// Slot is a time window in which a merchant's goods are on seckill sale.
type Slot struct {
	ID         int64     `json:"id"`
	MerchantID int64     `json:"merchant_id"`
	Title      string    `json:"title"`
	StartAt    time.Time `json:"start_at"`
	EndAt      time.Time `json:"end_at"`
	State      string    `json:"state"`
}

// Goods is an item on sale in a slot; Remaining is live from Redis once the
// goods is loaded, else the last stock SQLite knows.
type Goods struct {
	ID                int64     `json:"id"`
	SlotID            int64     `json:"slot_id"`
	MerchantID        int64     `json:"merchant_id"`
	Title             string    `json:"title"`
	Description       string    `json:"description"`
	PriceCents        int64     `json:"price_cents"`
	SeckillPriceCents int64     `json:"seckill_price_cents"`
	Stock             int64     `json:"stock"`
	LimitPerUser      int64     `json:"limit_per_user"`
	Remaining         int64     `json:"remaining"`
	StartAt           time.Time `json:"start_at"`
	EndAt             time.Time `json:"end_at"`
	State             string    `json:"state"`
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// owns reports whether the caller may see and change an item of merchantID.
func owns(by model.Claims, merchantID int64) bool {
	return by.Role == model.RoleAdmin || by.UserID == merchantID
}

const slotColumns = `id, merchant_id, title, start_ms, end_ms`

func (s *Store) scanSlot(row interface{ Scan(...any) error }) (*Slot, error) {
	var sl Slot
	var start, end int64
	if err := row.Scan(&sl.ID, &sl.MerchantID, &sl.Title, &start, &end); err != nil {
		return nil, err
	}
	sl.StartAt, sl.EndAt = msTime(start), msTime(end)
	sl.State = SlotState(s.Now(), sl.StartAt, sl.EndAt)
	return &sl, nil
}

func (s *Store) querySlots(ctx context.Context, where string, args ...any) ([]Slot, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+slotColumns+` FROM slots WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Slot{}
	for rows.Next() {
		sl, err := s.scanSlot(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *sl)
	}
	return out, rows.Err()
}

// CreateSlot adds a time slot owned by the caller.
func (s *Store) CreateSlot(ctx context.Context, by model.Claims, in SlotInput) (*Slot, error) {
	in.Title = strings.TrimSpace(in.Title)
	if err := ValidateSlot(s.Now(), in).Err(); err != nil {
		return nil, err
	}
	res, err := s.SQL.W.ExecContext(ctx, `INSERT INTO slots (merchant_id, title, start_ms, end_ms, created_ms) VALUES (?, ?, ?, ?, ?)`,
		by.UserID, in.Title, in.StartAt.UnixMilli(), in.EndAt.UnixMilli(), s.Now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("create slot: %w", err)
	}
	id, _ := res.LastInsertId()
	sl, err := s.Slot(ctx, id)
	if err != nil {
		return nil, err
	}
	s.scheduleSlotSync(ctx, sl)
	return sl, nil
}

// UpdateSlot changes a slot of the caller's. Once the sale has started only
// the title may change; goods already loaded into Redis get the new window.
func (s *Store) UpdateSlot(ctx context.Context, by model.Claims, id int64, in SlotInput) (*Slot, error) {
	old, err := s.ownedSlot(ctx, by, id)
	if err != nil {
		return nil, err
	}
	in.Title = strings.TrimSpace(in.Title)
	moved := !in.StartAt.Equal(old.StartAt) || !in.EndAt.Equal(old.EndAt)
	if moved {
		if old.State != SlotUpcoming {
			return nil, Errorf(ECONFLICT, "the sale has started: only the title can change")
		}
		if err := ValidateSlot(s.Now(), in).Err(); err != nil {
			return nil, err
		}
	} else {
		f := FieldErrors{}
		checkTitle(f, "title", in.Title)
		if err := f.Err(); err != nil {
			return nil, err
		}
	}
	if _, err := s.SQL.W.ExecContext(ctx, `UPDATE slots SET title = ?, start_ms = ?, end_ms = ? WHERE id = ?`,
		in.Title, in.StartAt.UnixMilli(), in.EndAt.UnixMilli(), id); err != nil {
		return nil, fmt.Errorf("update slot %d: %w", id, err)
	}
	sl, err := s.Slot(ctx, id)
	if err != nil {
		return nil, err
	}
	if moved {
		goods, err := s.slotGoodsRows(ctx, id)
		if err != nil {
			return nil, err
		}
		for i := range goods {
			if err := s.refreshGoods(ctx, &goods[i]); err != nil {
				return nil, err
			}
		}
		s.scheduleSlotSync(ctx, sl)
	}
	return sl, nil
}

// Slot returns one slot.
func (s *Store) Slot(ctx context.Context, id int64) (*Slot, error) {
	sl, err := s.scanSlot(s.SQL.R.QueryRowContext(ctx, `SELECT `+slotColumns+` FROM slots WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "slot %d not found", id)
	}
	return sl, err
}

func (s *Store) ownedSlot(ctx context.Context, by model.Claims, id int64) (*Slot, error) {
	sl, err := s.Slot(ctx, id)
	if err != nil {
		return nil, err
	}
	if !owns(by, sl.MerchantID) {
		return nil, Errorf(ENOTFOUND, "slot %d not found", id)
	}
	return sl, nil
}

// OwnedSlot returns a slot the caller may manage.
func (s *Store) OwnedSlot(ctx context.Context, by model.Claims, id int64) (*Slot, error) {
	return s.ownedSlot(ctx, by, id)
}

// Slots lists the live and upcoming slots of every merchant, soonest first.
func (s *Store) Slots(ctx context.Context) ([]Slot, error) {
	return s.querySlots(ctx, `end_ms > ? ORDER BY start_ms, id LIMIT 200`, s.Now().UnixMilli())
}

// MerchantSlots lists the caller's slots (an admin's: everyone's), newest first.
func (s *Store) MerchantSlots(ctx context.Context, by model.Claims) ([]Slot, error) {
	if by.Role == model.RoleAdmin {
		return s.querySlots(ctx, `1 ORDER BY start_ms DESC, id DESC LIMIT 200`)
	}
	return s.querySlots(ctx, `merchant_id = ? ORDER BY start_ms DESC, id DESC LIMIT 200`, by.UserID)
}

const goodsColumns = `g.id, g.slot_id, g.merchant_id, g.title, g.description, g.price_cents, g.seckill_price_cents,
	g.stock, g.limit_per_user, g.remaining, s.start_ms, s.end_ms`

func (s *Store) queryGoods(ctx context.Context, where string, args ...any) ([]Goods, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+goodsColumns+` FROM goods g JOIN slots s ON s.id = g.slot_id WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Goods{}
	now := s.Now()
	for rows.Next() {
		var g Goods
		var start, end int64
		if err := rows.Scan(&g.ID, &g.SlotID, &g.MerchantID, &g.Title, &g.Description, &g.PriceCents, &g.SeckillPriceCents,
			&g.Stock, &g.LimitPerUser, &g.Remaining, &start, &end); err != nil {
			return nil, err
		}
		g.StartAt, g.EndAt = msTime(start), msTime(end)
		g.State = SlotState(now, g.StartAt, g.EndAt)
		out = append(out, g)
	}
	return out, rows.Err()
}

// goodsRow returns the goods as SQLite holds it, without the live remaining.
func (s *Store) goodsRow(ctx context.Context, id int64) (*Goods, error) {
	gs, err := s.queryGoods(ctx, `g.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, Errorf(ENOTFOUND, "goods %d not found", id)
	}
	return &gs[0], nil
}

func (s *Store) slotGoodsRows(ctx context.Context, slotID int64) ([]Goods, error) {
	return s.queryGoods(ctx, `g.slot_id = ? ORDER BY g.id`, slotID)
}

// CreateGoods adds goods to one of the caller's slots; inside the preheat
// window it is loaded into Redis at once.
func (s *Store) CreateGoods(ctx context.Context, by model.Claims, in GoodsInput) (*Goods, error) {
	in.Title, in.Description = strings.TrimSpace(in.Title), strings.TrimSpace(in.Description)
	if err := ValidateGoods(&in).Err(); err != nil {
		return nil, err
	}
	sl, err := s.ownedSlot(ctx, by, in.SlotID)
	if err != nil {
		return nil, err
	}
	if sl.State == SlotEnded {
		return nil, Errorf(ECONFLICT, "slot %d has ended", sl.ID)
	}
	var id int64
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO goods (slot_id, merchant_id, title, description, price_cents, seckill_price_cents,
			stock, limit_per_user, remaining, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sl.ID, sl.MerchantID, in.Title, in.Description, in.PriceCents, in.SeckillPriceCents, in.Stock, in.LimitPerUser, in.Stock, s.Now().UnixMilli())
		if err != nil {
			return err
		}
		id, _ = res.LastInsertId()
		if id > MaxGoodsID {
			return Errorf(ECONFLICT, "the goods table is full")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	g, err := s.goodsRow(ctx, id)
	if err != nil {
		return nil, err
	}
	if PreheatDue(s.Now(), g.StartAt, g.EndAt) {
		if _, err := s.loadGoods(ctx, g); err != nil {
			return nil, err
		}
	}
	return s.Goods(ctx, id)
}

// UpdateGoods changes goods of the caller's. Title and description may change
// at any time; prices, stock and limit only before the sale starts.
func (s *Store) UpdateGoods(ctx context.Context, by model.Claims, id int64, in GoodsInput) (*Goods, error) {
	old, err := s.OwnedGoods(ctx, by, id)
	if err != nil {
		return nil, err
	}
	in.SlotID = old.SlotID
	in.Title, in.Description = strings.TrimSpace(in.Title), strings.TrimSpace(in.Description)
	if err := ValidateGoods(&in).Err(); err != nil {
		return nil, err
	}
	terms := in.PriceCents != old.PriceCents || in.SeckillPriceCents != old.SeckillPriceCents ||
		in.Stock != old.Stock || in.LimitPerUser != old.LimitPerUser
	if terms && old.State != SlotUpcoming {
		return nil, Errorf(ECONFLICT, "the sale has started: only the title and description can change")
	}
	if _, err := s.SQL.W.ExecContext(ctx, `UPDATE goods SET title = ?, description = ?, price_cents = ?, seckill_price_cents = ?,
		stock = ?, limit_per_user = ?, remaining = CASE WHEN ? THEN ? ELSE remaining END WHERE id = ?`,
		in.Title, in.Description, in.PriceCents, in.SeckillPriceCents, in.Stock, in.LimitPerUser, terms, in.Stock, id); err != nil {
		return nil, fmt.Errorf("update goods %d: %w", id, err)
	}
	g, err := s.goodsRow(ctx, id)
	if err != nil {
		return nil, err
	}
	if terms {
		if err := s.refreshGoods(ctx, g); err != nil {
			return nil, err
		}
	}
	return s.Goods(ctx, id)
}

// Goods returns one goods with its live remaining stock.
func (s *Store) Goods(ctx context.Context, id int64) (*Goods, error) {
	g, err := s.goodsRow(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.fillRemaining(ctx, []*Goods{g}); err != nil {
		return nil, err
	}
	return g, nil
}

// OwnedGoods returns goods the caller may manage, with live remaining stock.
func (s *Store) OwnedGoods(ctx context.Context, by model.Claims, id int64) (*Goods, error) {
	g, err := s.Goods(ctx, id)
	if err != nil {
		return nil, err
	}
	if !owns(by, g.MerchantID) {
		return nil, Errorf(ENOTFOUND, "goods %d not found", id)
	}
	return g, nil
}

// SlotGoods lists the goods of a slot with live remaining stock.
func (s *Store) SlotGoods(ctx context.Context, slotID int64) ([]Goods, error) {
	if _, err := s.Slot(ctx, slotID); err != nil {
		return nil, err
	}
	gs, err := s.slotGoodsRows(ctx, slotID)
	if err != nil {
		return nil, err
	}
	ptrs := make([]*Goods, len(gs))
	for i := range gs {
		ptrs[i] = &gs[i]
	}
	return gs, s.fillRemaining(ctx, ptrs)
}

// fillRemaining replaces SQLite's remaining with Redis's for goods loaded there, in one round trip.
func (s *Store) fillRemaining(ctx context.Context, gs []*Goods) error {
	if len(gs) == 0 {
		return nil
	}
	pipe := s.Redis.Pipeline()
	fresh := make([]*redis.StringCmd, len(gs))
	free := make([]*redis.IntCmd, len(gs))
	for i, g := range gs {
		fresh[i] = pipe.Get(ctx, goodsFreshKey(g.ID))
		free[i] = pipe.LLen(ctx, goodsFreeKey(g.ID))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read remaining stock: %w", err)
	}
	for i, g := range gs {
		if n, err := fresh[i].Int64(); err == nil {
			g.Remaining = n + free[i].Val()
		}
	}
	return nil
}
