package goods

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// msTime reads a unix-millisecond column as a UTC time.
func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// owns reports whether the caller may see and change an item of merchantID.
func owns(by model.Claims, merchantID int64) bool {
	return by.Role == model.RoleAdmin || by.UserID == merchantID
}

const slotColumns = `id, merchant_id, title, start_ms, end_ms, ended_ms, hidden`

func (s *Service) scanSlot(row interface{ Scan(...any) error }) (*model.Slot, error) {
	var sl model.Slot
	var start, end int64
	var ended sql.NullInt64
	if err := row.Scan(&sl.ID, &sl.MerchantID, &sl.Title, &start, &end, &ended, &sl.Hidden); err != nil {
		return nil, err
	}
	sl.StartAt, sl.EndAt, sl.EndedEarly = msTime(start), msTime(end), ended.Valid
	sl.State = SlotState(s.Now(), sl.StartAt, sl.EndAt)
	return &sl, nil
}

func (s *Service) querySlots(ctx context.Context, where string, args ...any) ([]model.Slot, error) {
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

// CreateSlot adds a time slot owned by the caller.
func (s *Service) CreateSlot(ctx context.Context, by model.Claims, in SlotInput) (*model.Slot, error) {
	in.Title = strings.TrimSpace(in.Title)
	if err := ValidateSlot(s.Now(), in).Err(); err != nil {
		return nil, err
	}
	var id int64
	err := s.SQL.W.QueryRowContext(ctx, `INSERT INTO slots (merchant_id, title, start_ms, end_ms, created_ms) VALUES (?, ?, ?, ?, ?) RETURNING id`,
		by.UserID, in.Title, in.StartAt.UnixMilli(), in.EndAt.UnixMilli(), s.Now().UnixMilli()).Scan(&id)
	if err != nil {
		return nil, fmt.Errorf("create slot: %w", err)
	}
	sl, err := s.Slot(ctx, id)
	if err != nil {
		return nil, err
	}
	s.scheduleSlotSync(ctx, sl)
	return sl, nil
}

// UpdateSlot changes a slot of the caller's. Once the sale has started only
// the title may change; goods already loaded into Redis get the new window.
func (s *Service) UpdateSlot(ctx context.Context, by model.Claims, id int64, in SlotInput) (*model.Slot, error) {
	old, err := s.ownedSlot(ctx, by, id)
	if err != nil {
		return nil, err
	}
	in.Title = strings.TrimSpace(in.Title)
	moved := !in.StartAt.Equal(old.StartAt) || !in.EndAt.Equal(old.EndAt)
	if moved {
		if old.State != model.SlotUpcoming {
			return nil, db.Errorf(db.ECONFLICT, "the sale has started: only the title can change")
		}
		if err := ValidateSlot(s.Now(), in).Err(); err != nil {
			return nil, err
		}
	} else {
		f := db.FieldErrors{}
		checkTitle(f, "title", in.Title)
		if err := f.Err(); err != nil {
			return nil, err
		}
	}
	// A move is written only while the slot is where it was read and still
	// upcoming, so it never undoes a move or lands after the sale started
	// (updates run side by side on PostgreSQL); a new title is written alone.
	q, args := `UPDATE slots SET title = ? WHERE id = ?`, []any{in.Title, id}
	if moved {
		q = `UPDATE slots SET title = ?, start_ms = ?, end_ms = ? WHERE id = ? AND start_ms = ? AND end_ms = ? AND start_ms > ?`
		args = []any{in.Title, in.StartAt.UnixMilli(), in.EndAt.UnixMilli(), id, old.StartAt.UnixMilli(), old.EndAt.UnixMilli(), s.Now().UnixMilli()}
	}
	var n int64
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		if n, _ = res.RowsAffected(); n == 0 || !moved {
			return nil
		}
		return s.moveReminders(ctx, tx, id, in.StartAt) // bookings follow the slot
	})
	if err != nil {
		return nil, fmt.Errorf("update slot %d: %w", id, err)
	}
	if n == 0 {
		return nil, db.Errorf(db.ECONFLICT, "slot %d changed meanwhile or its sale started: reload and try again", id)
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
			if err := s.refresh(ctx, &goods[i]); err != nil {
				return nil, err
			}
		}
		s.scheduleSlotSync(ctx, sl)
		if err := s.rescheduleReminders(ctx, goods, old.StartAt); err != nil {
			return nil, err
		}
	}
	return sl, nil
}

// Slot returns one slot.
func (s *Service) Slot(ctx context.Context, id int64) (*model.Slot, error) {
	sl, err := s.scanSlot(s.SQL.R.QueryRowContext(ctx, `SELECT `+slotColumns+` FROM slots WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, db.Errorf(db.ENOTFOUND, "slot %d not found", id)
	}
	return sl, err
}

func (s *Service) ownedSlot(ctx context.Context, by model.Claims, id int64) (*model.Slot, error) {
	sl, err := s.Slot(ctx, id)
	if err != nil {
		return nil, err
	}
	if !owns(by, sl.MerchantID) {
		return nil, db.Errorf(db.ENOTFOUND, "slot %d not found", id)
	}
	return sl, nil
}

// OwnedSlot returns a slot the caller may manage.
func (s *Service) OwnedSlot(ctx context.Context, by model.Claims, id int64) (*model.Slot, error) {
	return s.ownedSlot(ctx, by, id)
}

// Slots lists the live and upcoming slots of every merchant shoppers may see, soonest first.
func (s *Service) Slots(ctx context.Context) ([]model.Slot, error) {
	return s.querySlots(ctx, `end_ms > ? AND hidden = 0 ORDER BY start_ms, id LIMIT 200`, s.Now().UnixMilli())
}

// MerchantSlots lists the caller's slots (an admin's: everyone's), newest first.
func (s *Service) MerchantSlots(ctx context.Context, by model.Claims) ([]model.Slot, error) {
	if by.Role == model.RoleAdmin {
		return s.querySlots(ctx, `true ORDER BY start_ms DESC, id DESC LIMIT 200`)
	}
	return s.querySlots(ctx, `merchant_id = ? ORDER BY start_ms DESC, id DESC LIMIT 200`, by.UserID)
}

const goodsColumns = `g.id, g.slot_id, g.merchant_id, g.title, g.description, g.price_cents, g.seckill_price_cents,
	g.stock, g.limit_per_user, g.shards, g.remaining, s.start_ms, s.end_ms, g.ended_ms, g.hidden, s.hidden, g.image,
	g.pow_bits, g.preregistered_only, g.mode, g.queue_rate, g.admission_seconds, g.entry_start_ms`

func (s *Service) queryGoods(ctx context.Context, where string, args ...any) ([]model.Goods, error) {
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
			&g.PowBits, &g.PreregisteredOnly, &g.Mode, &g.QueueRate, &g.AdmissionSeconds, &entryStart); err != nil {
			return nil, err
		}
		// Goods ended early closes before its slot: its window ends then
		// (and, ended before it opened, starts then too, so it reads ended).
		if ended.Valid && ended.Int64 < end {
			end, g.EndedEarly = ended.Int64, true
		}
		start = min(start, end)
		g.StartAt, g.EndAt = msTime(start), msTime(end)
		g.ImageURL = ImageURL(image)
		if entryStart.Valid {
			t := msTime(entryStart.Int64)
			g.EntryStartAt = &t
		}
		g.State = SlotState(now, g.StartAt, g.EndAt)
		out = append(out, g)
	}
	return out, rows.Err()
}

// goodsRow returns the goods as the store holds it, without the live remaining.
func (s *Service) goodsRow(ctx context.Context, id int64) (*model.Goods, error) {
	gs, err := s.queryGoods(ctx, `g.id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", id)
	}
	return &gs[0], nil
}

func (s *Service) slotGoodsRows(ctx context.Context, slotID int64) ([]model.Goods, error) {
	return s.queryGoods(ctx, `g.slot_id = ? ORDER BY g.id`, slotID)
}

// Create adds goods to one of the caller's slots; inside the preheat
// window it is loaded into Redis at once. Every invalid field is reported
// at once, before anything is created.
func (s *Service) Create(ctx context.Context, by model.Claims, in Input) (*model.Goods, error) {
	in.Title, in.Description = strings.TrimSpace(in.Title), strings.TrimSpace(in.Description)
	withDefaults(&in, s.Now())
	f := Validate(&in)
	var sl *model.Slot
	if f["slot_id"] == "" {
		var err error
		// An unknown slot is not found, unless the input is invalid anyway.
		if sl, err = s.ownedSlot(ctx, by, in.SlotID); err != nil && (len(f) == 0 || db.ErrorCode(err) != db.ENOTFOUND) {
			return nil, err
		}
	}
	if sl != nil {
		checkEntryWindow(f, &in, sl.StartAt)
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	if sl.State == model.SlotEnded {
		return nil, db.Errorf(db.ECONFLICT, "slot %d has ended", sl.ID)
	}
	if *in.Mode != model.ModeFirstCome && sl.State != model.SlotUpcoming {
		return nil, db.Errorf(db.ECONFLICT, "a %s sale is set before it starts: slot %d has started", *in.Mode, sl.ID)
	}
	var id int64
	err := s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO goods (slot_id, merchant_id, title, description, price_cents, seckill_price_cents,
			stock, limit_per_user, shards, remaining, created_ms, pow_bits, preregistered_only,
			mode, queue_rate, admission_seconds, entry_start_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			sl.ID, sl.MerchantID, in.Title, in.Description, in.PriceCents, in.SeckillPriceCents, in.Stock, in.LimitPerUser, *in.Shards, in.Stock, s.Now().UnixMilli(),
			in.PowBits, flag(in.PreregisteredOnly), *in.Mode, *in.QueueRate, *in.AdmissionSeconds, entryStartMs(&in)).Scan(&id)
		if err != nil {
			return err
		}
		if id > MaxID {
			return db.Errorf(db.ECONFLICT, "the goods table is full")
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
		if _, err := s.load(ctx, g); err != nil {
			return nil, err
		}
	}
	if g.Mode == model.ModeRaffle { // its seed's hash is published from now on (raffle.go)
		if err := s.openRaffle(ctx, g); err != nil {
			return nil, err
		}
	}
	return s.Get(ctx, id)
}

// Update changes goods of the caller's. Title and description may change
// at any time; prices, stock and limit only before the sale starts.
func (s *Service) Update(ctx context.Context, by model.Claims, id int64, in Input) (*model.Goods, error) {
	old, err := s.Owned(ctx, by, id)
	if err != nil {
		return nil, err
	}
	in.SlotID = old.SlotID
	in.Title, in.Description = strings.TrimSpace(in.Title), strings.TrimSpace(in.Description)
	withUnchanged(&in, old, s.Now())
	f := Validate(&in)
	checkEntryWindow(f, &in, old.StartAt)
	if err := f.Err(); err != nil {
		return nil, err
	}
	terms := in.PriceCents != old.PriceCents || in.SeckillPriceCents != old.SeckillPriceCents ||
		in.Stock != old.Stock || in.LimitPerUser != old.LimitPerUser || *in.Shards != old.Shards
	// How the goods is sold changes only before its sale, as its terms do.
	mode := *in.Mode != old.Mode || (isRaffle(&in) && (old.EntryStartAt == nil || !in.EntryStartAt.Equal(*old.EntryStartAt)))
	if (terms || mode) && old.State != model.SlotUpcoming {
		return nil, db.Errorf(db.ECONFLICT, "the sale has started: only the title, description and proof of work can change")
	}
	// Written only while the terms are the ones read, and new terms only
	// while the slot is still upcoming: a concurrent change (updates run side
	// by side on PostgreSQL) or the sale's start makes this one answer a conflict.
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE goods SET title = ?, description = ?, price_cents = ?, seckill_price_cents = ?,
		stock = ?, limit_per_user = ?, shards = ?, remaining = CASE WHEN ? THEN ? ELSE remaining END, pow_bits = ?, preregistered_only = ?,
		mode = ?, queue_rate = ?, admission_seconds = ?, entry_start_ms = ?
		WHERE id = ? AND price_cents = ? AND seckill_price_cents = ? AND stock = ? AND limit_per_user = ? AND shards = ? AND mode = ?
			AND (NOT ? OR (SELECT start_ms FROM slots WHERE slots.id = goods.slot_id) > ?)`,
		in.Title, in.Description, in.PriceCents, in.SeckillPriceCents, in.Stock, in.LimitPerUser, *in.Shards, terms, in.Stock,
		in.PowBits, flag(in.PreregisteredOnly), *in.Mode, *in.QueueRate, *in.AdmissionSeconds, entryStartMs(&in),
		id, old.PriceCents, old.SeckillPriceCents, old.Stock, old.LimitPerUser, old.Shards, old.Mode, terms || mode, s.Now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("update goods %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, db.Errorf(db.ECONFLICT, "goods %d changed meanwhile or its sale started: reload and try again", id)
	}
	s.fair.forget(id)
	g, err := s.goodsRow(ctx, id)
	if err != nil {
		return nil, err
	}
	if terms {
		if err := s.refresh(ctx, g); err != nil {
			return nil, err
		}
	}
	return s.Get(ctx, id)
}

// Get returns one goods with its live remaining stock.
func (s *Service) Get(ctx context.Context, id int64) (*model.Goods, error) {
	g, err := s.goodsRow(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := s.fillRemaining(ctx, []*model.Goods{g}); err != nil {
		return nil, err
	}
	return g, nil
}

// Owned returns goods the caller may manage, with live remaining stock.
func (s *Service) Owned(ctx context.Context, by model.Claims, id int64) (*model.Goods, error) {
	g, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !owns(by, g.MerchantID) {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", id)
	}
	return g, nil
}

// SlotGoods lists the goods of a slot with live remaining stock.
func (s *Service) SlotGoods(ctx context.Context, slotID int64) ([]model.Goods, error) {
	if _, err := s.Slot(ctx, slotID); err != nil {
		return nil, err
	}
	gs, err := s.slotGoodsRows(ctx, slotID)
	if err != nil {
		return nil, err
	}
	ptrs := make([]*model.Goods, len(gs))
	for i := range gs {
		ptrs[i] = &gs[i]
	}
	return gs, s.fillRemaining(ctx, ptrs)
}

// fillRemaining replaces the store's remaining with Redis's for goods loaded there, in one round trip.
func (s *Service) fillRemaining(ctx context.Context, gs []*model.Goods) error {
	if len(gs) == 0 {
		return nil
	}
	ids := make([]int64, len(gs))
	for i, g := range gs {
		ids[i] = g.ID
	}
	shards, err := s.shardsOf(ctx, false, ids...)
	if err != nil {
		return err
	}
	pipe := s.Redis.Pipeline()
	fresh := make([][]*redis.StringCmd, len(gs))
	free := make([][]*redis.IntCmd, len(gs))
	for i, g := range gs {
		for _, b := range bucketsOf(g.ID, shards[g.ID]) {
			fresh[i] = append(fresh[i], pipe.Get(ctx, freshKey(b)))
			free[i] = append(free[i], pipe.LLen(ctx, freeKey(b)))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read remaining stock: %w", err)
	}
	for i, g := range gs {
		sum, loaded := int64(0), true
		for j := range fresh[i] {
			n, err := fresh[i][j].Int64()
			loaded = loaded && err == nil
			sum += n + free[i][j].Val()
		}
		if loaded {
			g.Remaining = sum
		}
	}
	return nil
}
