package goods

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/model"
)

// CreateSlot adds a time slot owned by the caller.
func (s *Service) CreateSlot(ctx context.Context, by model.Claims, in SlotInput) (_ *model.Slot, err error) {
	defer s.announce(ctx, &err)
	in.Title = strings.TrimSpace(in.Title)
	if err := ValidateSlot(s.Now(), in).Err(); err != nil {
		return nil, err
	}
	var id int64
	err = s.SQL.W.QueryRowContext(ctx, `INSERT INTO slots (merchant_id, title, start_ms, end_ms, created_ms, rehearsal) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
		by.UserID, in.Title, in.StartAt.UnixMilli(), in.EndAt.UnixMilli(), s.Now().UnixMilli(), flag(in.Rehearsal)).Scan(&id)
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

// CheckSlot returns the problems of a slot's fields, writing nothing (see Check).
func (s *Service) CheckSlot(in SlotInput) error {
	in.Title = strings.TrimSpace(in.Title)
	return ValidateSlot(s.Now(), in).Err()
}

// UpdateSlot changes a slot of the caller's. Once the sale has started only
// the title may change; goods already loaded into Redis get the new window.
func (s *Service) UpdateSlot(ctx context.Context, by model.Claims, id int64, in SlotInput) (_ *model.Slot, err error) {
	defer s.announce(ctx, &err)
	old, err := s.OwnedSlot(ctx, by, id)
	if err != nil {
		return nil, err
	}
	if in.Kept.Title {
		in.Title = old.Title
	}
	if in.Kept.StartAt {
		in.StartAt = old.StartAt
	}
	if in.Kept.EndAt {
		in.EndAt = old.EndAt
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
		goods, err := s.SlotGoodsRows(ctx, id)
		if err != nil {
			return nil, err
		}
		for i := range goods {
			if err := s.Refresh(ctx, &goods[i]); err != nil {
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

// Slots lists the live and upcoming slots of every merchant shoppers may
// see, soonest first; a rehearsal is reached only by its link.
func (s *Service) Slots(ctx context.Context) ([]model.Slot, error) {
	return s.QuerySlots(ctx, `end_ms > ? AND hidden = 0 AND rehearsal = 0 ORDER BY start_ms, id LIMIT 200`, s.Now().UnixMilli())
}

// MerchantSlots lists the caller's slots (an admin's: everyone's), newest first.
func (s *Service) MerchantSlots(ctx context.Context, by model.Claims) ([]model.Slot, error) {
	if by.Role == model.RoleAdmin {
		return s.QuerySlots(ctx, `true ORDER BY start_ms DESC, id DESC LIMIT 200`)
	}
	return s.QuerySlots(ctx, `merchant_id = ? ORDER BY start_ms DESC, id DESC LIMIT 200`, by.UserID)
}

// Create adds goods to one of the caller's slots; inside the preheat
// window it is loaded into Redis at once. Every invalid field is reported
// at once, before anything is created.
func (s *Service) Create(ctx context.Context, by model.Claims, in Input) (_ *model.Goods, err error) {
	defer s.announce(ctx, &err)
	f, sl, err := s.checkNew(ctx, by, &in)
	if err != nil {
		return nil, err
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
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO goods (slot_id, merchant_id, title, description, price_cents, seckill_price_cents,
			stock, limit_per_user, shards, remaining, created_ms, pow_bits, preregistered_only,
			mode, queue_rate, admission_seconds, entry_start_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			sl.ID, sl.MerchantID, in.Title, *in.Description, in.PriceCents, in.SeckillPriceCents, in.Stock, in.LimitPerUser, *in.Shards, in.Stock, s.Now().UnixMilli(),
			*in.PowBits, flag(*in.PreregisteredOnly), *in.Mode, *in.QueueRate, *in.AdmissionSeconds, entryStartMs(&in)).Scan(&id)
		if err != nil {
			return err
		}
		if id > sale.MaxID {
			return db.Errorf(db.ECONFLICT, "the goods table is full")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	g, err := s.GoodsRow(ctx, id)
	if err != nil {
		return nil, err
	}
	if sale.PreheatDue(s.Now(), g.StartAt, g.EndAt) {
		if _, err := s.Load(ctx, g); err != nil {
			return nil, err
		}
	}
	if s.Fair != nil { // a raffle's seed hash is published from now on
		if err := s.Fair.Created(ctx, g); err != nil {
			return nil, err
		}
	}
	return s.Get(ctx, id)
}

// checkNew normalises new goods and finds its fields' problems, with its
// slot (nil when the slot is the problem); err is a refusal that is no field's.
func (s *Service) checkNew(ctx context.Context, by model.Claims, in *Input) (f db.FieldErrors, sl *model.Slot, err error) {
	withDefaults(in, s.Now())
	in.Title, in.Description = strings.TrimSpace(in.Title), new(strings.TrimSpace(*in.Description))
	f = Validate(in)
	if f["slot_id"] == "" {
		// An unknown slot is not found, unless the input is invalid anyway.
		if sl, err = s.OwnedSlot(ctx, by, in.SlotID); err != nil && (len(f) == 0 || db.ErrorCode(err) != db.ENOTFOUND) {
			return nil, nil, err
		}
	}
	if sl != nil {
		checkEntryWindow(f, in, sl.StartAt)
	}
	return f, sl, nil
}

// checkChange normalises a change of old and finds its fields' problems.
func (s *Service) checkChange(old *model.Goods, in *Input) db.FieldErrors {
	in.SlotID = old.SlotID
	withUnchanged(in, old, s.Now())
	in.Title, in.Description = strings.TrimSpace(in.Title), new(strings.TrimSpace(*in.Description))
	f := Validate(in)
	checkEntryWindow(f, in, old.StartAt)
	return f
}

// Check returns the problems of the fields Create (id 0) or Update (of
// goods id) would find in in, writing nothing: a form that could not read
// some of its fields shows the others' problems beside them, all at once.
func (s *Service) Check(ctx context.Context, by model.Claims, id int64, in Input) error {
	if id == 0 {
		f, _, err := s.checkNew(ctx, by, &in)
		if err != nil {
			return err
		}
		return f.Err()
	}
	old, err := s.Owned(ctx, by, id)
	if err != nil {
		return err
	}
	return s.checkChange(old, &in).Err()
}

// Update changes goods of the caller's. Title and description may change
// at any time; prices, stock and limit only before the sale starts.
func (s *Service) Update(ctx context.Context, by model.Claims, id int64, in Input) (_ *model.Goods, err error) {
	defer s.announce(ctx, &err)
	old, err := s.Owned(ctx, by, id)
	if err != nil {
		return nil, err
	}
	if err := s.checkChange(old, &in).Err(); err != nil {
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
		in.Title, *in.Description, in.PriceCents, in.SeckillPriceCents, in.Stock, in.LimitPerUser, *in.Shards, terms, in.Stock,
		*in.PowBits, flag(*in.PreregisteredOnly), *in.Mode, *in.QueueRate, *in.AdmissionSeconds, entryStartMs(&in),
		id, old.PriceCents, old.SeckillPriceCents, old.Stock, old.LimitPerUser, old.Shards, old.Mode, terms || mode, s.Now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("update goods %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, db.Errorf(db.ECONFLICT, "goods %d changed meanwhile or its sale started: reload and try again", id)
	}
	if s.Fair != nil {
		s.Fair.Changed(id)
	}
	g, err := s.GoodsRow(ctx, id)
	if err != nil {
		return nil, err
	}
	if terms {
		if err := s.Refresh(ctx, g); err != nil {
			return nil, err
		}
	}
	return s.Get(ctx, id)
}
