package raffle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/fair/verify"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
	"github.com/seckill/seckill/tasks"
)

// Raffles (mode raffle): shoppers enter from the goods' entry_start_at to
// its sale's start. At the start entries close and their Merkle root is
// frozen and published (verify/merkle.go, root.go); the draw
// (draw.go) then puts the entries in an order computed from the
// seed whose SHA-256 was published when the raffle was created (sealed in
// the store until then, seal.go), the entries root and, with a
// beacon, the randomness of a public round published after the close
// (verify/beacon.go; verify/draw.go has the rule), and the first stock of
// them get an unpaid order each, made by the ordinary grab on their behalf.
// The store holds the raffle: the sealed seed, the entries, the root and
// the draw's result; Redis only the orders, as for any goods.

// raffleGoods returns goods shoppers may see that is a raffle.
func (s *Raffles) raffleGoods(ctx context.Context, goodsID int64) (*model.Goods, error) {
	if goodsID <= 0 || goodsID > goods.MaxID {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", goodsID)
	}
	g, err := s.Goods.GoodsRow(ctx, goodsID)
	if err != nil {
		return nil, err
	}
	if !g.Listed() {
		return nil, db.Errorf(db.ENOTFOUND, "goods %d not found", goodsID)
	}
	if err := goods.NotSoldBy(g, model.ModeRaffle); err != nil {
		return nil, err
	}
	return g, nil
}

// openRaffle makes the raffle's secret seed, sealed (seal.go; its
// hash is published from now on), names the beacon round mixed into its
// draw (verify/beacon.go) and schedules the draw at the sale's start; a
// raffle open already is left as it is. Goods creation calls it; entries
// and the draw's page call it too, for goods made a raffle by an update.
func (s *Raffles) openRaffle(ctx context.Context, g *model.Goods) error {
	var one int
	err := s.SQL.R.QueryRowContext(ctx, `SELECT 1 FROM raffles WHERE goods_id = ?`, g.ID).Scan(&one)
	if err == nil {
		return nil
	} else if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("open raffle of goods %d: %w", g.ID, err)
	}
	seed := verify.NewSeed()
	sealed, err := s.sealSeed(g.ID, seed)
	if err != nil {
		return fmt.Errorf("open raffle of goods %d: seal the seed: %w", g.ID, err)
	}
	var round *int64
	if s.Beacon != nil {
		if info, err := s.Beacon.Info(ctx); err != nil {
			s.Log.Warn("name a raffle's beacon round: the beacon does not answer; the round is named when entries close", "goods", g.ID, "err", err)
		} else {
			round = new(info.RoundAfter(g.StartAt))
		}
	}
	res, err := s.SQL.W.ExecContext(ctx, `INSERT INTO raffles (goods_id, seed, seed_sealed, seed_hash, created_ms, beacon_round) VALUES (?, '', ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`, g.ID, sealed, verify.SeedHash(seed), s.Now().UnixMilli(), round)
	if err != nil {
		return fmt.Errorf("open raffle of goods %d: %w", g.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		s.scheduleDraw(ctx, g)
	}
	return nil
}

// closedEntries is what the close of a raffle's entries froze.
type closedEntries struct {
	root  string        // the entries root
	round sql.NullInt64 // the beacon round the draw waits for
	drawn bool
}

// closeEntries freezes the raffle's entries root once its entries have
// closed (the caller checks the sale started): in one transaction that
// takes the raffle's row first, as every entry does, so no entry is added
// after it and the root never changes. It names the beacon round again
// when the start moved past the one named at the opening (or none was).
// A raffle closed or drawn already is only read.
func (s *Raffles) closeEntries(ctx context.Context, g *model.Goods) (closedEntries, error) {
	var c closedEntries
	var want int64
	var infoErr error
	if s.Beacon != nil {
		var info verify.BeaconInfo
		if info, infoErr = s.Beacon.Info(ctx); infoErr == nil {
			want = info.RoundAfter(g.StartAt)
		}
	}
	err := s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE raffles SET entries = entries WHERE goods_id = ? AND entries_root IS NULL AND drawn_ms IS NULL`, g.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 { // closed (or drawn) before
			var root sql.NullString
			err := tx.QueryRowContext(ctx, `SELECT entries_root, beacon_round, drawn_ms IS NOT NULL FROM raffles WHERE goods_id = ?`, g.ID).
				Scan(&root, &c.round, &c.drawn)
			c.root = root.String
			return err
		}
		users, err := entrants(ctx, tx, g.ID)
		if err != nil {
			return err
		}
		c.root = verify.EntriesTree(g.ID, users).RootHex()
		if err := tx.QueryRowContext(ctx, `SELECT beacon_round FROM raffles WHERE goods_id = ?`, g.ID).Scan(&c.round); err != nil {
			return err
		}
		switch {
		case want > 0 && (!c.round.Valid || c.round.Int64 < want):
			c.round = sql.NullInt64{Int64: want, Valid: true}
		case s.Beacon != nil && !c.round.Valid:
			return fmt.Errorf("name the beacon round: %w", infoErr)
		}
		_, err = tx.ExecContext(ctx, `UPDATE raffles SET entries_root = ?, entries = ?, beacon_round = ? WHERE goods_id = ?`,
			c.root, len(users), c.round, g.ID)
		return err
	})
	if err != nil {
		return c, fmt.Errorf("close the entries of raffle %d: %w", g.ID, err)
	}
	return c, nil
}

// scheduleDraw enqueues the raffle's draw for its sale's start; the sweep
// (SweepRaffles) draws it if the task is lost or the start moved.
func (s *Raffles) scheduleDraw(ctx context.Context, g *model.Goods) {
	if s.Tasks == nil {
		return
	}
	err := s.Schedule(ctx, tasks.NewRaffleDrawTask(g.ID), asynq.ProcessAt(g.StartAt), asynq.TaskID(tasks.RaffleDrawTaskID(g.ID, g.StartAt)))
	if err != nil {
		s.Log.Warn("schedule a raffle's draw; the sweep draws it", "goods", g.ID, "err", err)
	}
}

// EnterRaffle enters the user in the raffle of goods, after Admit (the
// proof of work pow, pre-registration): created true for a new entry, false
// for the one the user had. Entries are open from the goods' entry start to
// its sale's start.
func (s *Raffles) EnterRaffle(ctx context.Context, userID, goodsID int64, pow string) (e *model.RaffleEntry, created bool, err error) {
	g, err := s.raffleGoods(ctx, goodsID)
	if err != nil {
		return nil, false, err
	}
	if e, err := s.raffleEntry(ctx, g, userID); err == nil {
		return e, false, nil
	} else if db.ErrorCode(err) != db.ENOTFOUND {
		return nil, false, err
	}
	now := s.Now()
	if g.EntryStartAt != nil && now.Before(*g.EntryStartAt) {
		return nil, false, db.Errorf(db.ENOTSTARTED, "entries to this raffle open at %s", g.EntryStartAt.Format(time.RFC3339))
	}
	closed := db.Errorf(db.EENDED, "entries to this raffle closed at %s, when the sale started and the draw was made", g.StartAt.Format(time.RFC3339))
	if !now.Before(g.StartAt) {
		return nil, false, closed
	}
	if err := s.Admit(ctx, userID, goodsID, pow); err != nil {
		return nil, false, err
	}
	if err := s.openRaffle(ctx, g); err != nil {
		return nil, false, err
	}
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		// The raffle's row first (the lock order the close and the draw
		// take too): no entry is added once the entries root is frozen.
		res, err := tx.ExecContext(ctx, `UPDATE raffles SET entries = entries + 1 WHERE goods_id = ? AND entries_root IS NULL AND drawn_ms IS NULL`, goodsID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return closed
		}
		res, err = tx.ExecContext(ctx, `INSERT INTO raffle_entries (goods_id, user_id, created_ms, state) VALUES (?, ?, ?, ?)
			ON CONFLICT DO NOTHING`, goodsID, userID, now.UnixMilli(), model.EntryEntered)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errEnteredMeanwhile
		}
		return nil
	})
	switch {
	case errors.Is(err, errEnteredMeanwhile): // the same shopper's other request won
		e, err := s.raffleEntry(ctx, g, userID)
		return e, false, err
	case err != nil:
		return nil, false, fmt.Errorf("enter raffle of goods %d: %w", goodsID, err)
	}
	e = &model.RaffleEntry{GoodsID: goodsID, UserID: userID, State: model.EntryEntered, EnteredAt: goods.MsTime(now.UnixMilli())}
	return e, true, nil
}

var errEnteredMeanwhile = errors.New("entered meanwhile")

// RaffleEntry returns the user's entry in the raffle of goods; not found
// when they did not enter. Once entries closed it carries the entry's leaf
// in the entries root and its proof.
func (s *Raffles) RaffleEntry(ctx context.Context, userID, goodsID int64) (*model.RaffleEntry, error) {
	g, err := s.raffleGoods(ctx, goodsID)
	if err != nil {
		return nil, err
	}
	e, err := s.raffleEntry(ctx, g, userID)
	if err != nil {
		return nil, err
	}
	d, err := s.raffleDraw(ctx, g) // closes the entries when due
	if err != nil {
		return nil, err
	}
	if d.EntriesRoot != "" {
		if e.Inclusion, err = s.inclusion(ctx, g.ID, d.EntriesRoot, userID); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (s *Raffles) raffleEntry(ctx context.Context, g *model.Goods, userID int64) (*model.RaffleEntry, error) {
	e := &model.RaffleEntry{GoodsID: g.ID, UserID: userID}
	var created int64
	var place, order sql.NullInt64
	err := s.SQL.R.QueryRowContext(ctx, `SELECT state, created_ms, place, order_id FROM raffle_entries WHERE goods_id = ? AND user_id = ?`,
		g.ID, userID).Scan(&e.State, &created, &place, &order)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, db.Errorf(db.ENOTFOUND, "you have not entered the raffle of goods %d", g.ID)
	} else if err != nil {
		return nil, err
	}
	e.EnteredAt = goods.MsTime(created)
	if place.Valid {
		e.Position = place.Int64 + 1
	}
	e.OrderID = order.Int64
	if e.State == model.EntryWaitlisted && !s.Now().Before(g.EndAt) { // the sale is over: no unit will come
		e.State = model.EntryLost
	}
	return e, nil
}

// RaffleDraw returns the raffle's public record: the seed's hash, the
// number of entries and the beacon round; from the close of entries their
// root; after the draw the seed, the beacon, the randomness and the
// draw's order. The first call after the close freezes the entries root.
func (s *Raffles) RaffleDraw(ctx context.Context, goodsID int64) (*model.RaffleDraw, error) {
	g, err := s.raffleGoods(ctx, goodsID)
	if err != nil {
		return nil, err
	}
	return s.raffleDraw(ctx, g)
}

func (s *Raffles) raffleDraw(ctx context.Context, g *model.Goods) (*model.RaffleDraw, error) {
	if err := s.openRaffle(ctx, g); err != nil {
		return nil, err
	}
	d := &model.RaffleDraw{GoodsID: g.ID, DrawAt: g.StartAt, Status: model.DrawOpen}
	var seed string
	var drawn, round sql.NullInt64
	var root, beacon, randomness sql.NullString
	var winners int64
	err := s.SQL.R.QueryRowContext(ctx, `SELECT seed, seed_hash, entries, drawn_ms, winners, passed, entries_root, beacon_round, beacon, randomness
		FROM raffles WHERE goods_id = ?`, g.ID).
		Scan(&seed, &d.SeedHash, &d.Entries, &drawn, &winners, &d.Passed, &root, &round, &beacon, &randomness)
	if err != nil {
		return nil, fmt.Errorf("raffle of goods %d: %w", g.ID, err)
	}
	if !drawn.Valid && !root.Valid && !s.Now().Before(g.StartAt) { // entries closed: freeze their root now
		c, err := s.closeEntries(ctx, g)
		if err != nil {
			return nil, err
		}
		root, round = sql.NullString{String: c.root, Valid: c.root != ""}, c.round
	}
	d.EntriesRoot = root.String
	if round.Valid {
		d.BeaconRound = &round.Int64
	}
	switch {
	case drawn.Valid:
		d.Status = model.DrawDrawn
	case s.Now().Before(g.StartAt):
		return d, nil // the seed stays secret until the draw
	case round.Valid:
		d.Status = model.DrawWaitingBeacon
		return d, nil
	default:
		d.Status = model.DrawClosed
		return d, nil
	}
	at := goods.MsTime(drawn.Int64)
	d.DrawnAt, d.Seed, d.Winners, d.Randomness = &at, seed, &winners, randomness.String
	if beacon.Valid {
		d.Beacon = &beacon.String
	}
	d.Order, err = sqldb.IDs(ctx, s.SQL.R, `SELECT user_id FROM raffle_entries WHERE goods_id = ? AND place IS NOT NULL ORDER BY place`, g.ID)
	if err == nil && d.Order == nil {
		d.Order = []int64{} // drawn with no entries: an empty order, not null
	}
	return d, err
}

// RaffleStats is the merchant's live view of a raffle of theirs: the draw
// and the entries by state.
func (s *Raffles) RaffleStats(ctx context.Context, by model.Claims, goodsID int64) (*model.RaffleStats, error) {
	g, err := s.Goods.Owned(ctx, by, goodsID)
	if err != nil {
		return nil, err
	}
	if err := goods.NotSoldBy(g, model.ModeRaffle); err != nil {
		return nil, err
	}
	d, err := s.raffleDraw(ctx, g)
	if err != nil {
		return nil, err
	}
	st := &model.RaffleStats{Draw: *d}
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT state, settled, COUNT(*) FROM raffle_entries WHERE goods_id = ? GROUP BY state, settled`, goodsID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	over := !s.Now().Before(g.EndAt)
	for rows.Next() {
		var state string
		var settled int
		var n int64
		if err := rows.Scan(&state, &settled, &n); err != nil {
			return nil, err
		}
		switch state {
		case model.EntryEntered:
			st.Entered += n
		case model.EntryWon:
			st.Won += n
			if settled == 1 {
				st.Paid += n
			}
		case model.EntryWaitlisted:
			if over {
				st.Lost += n
			} else {
				st.Waitlisted += n
			}
		case model.EntryLost:
			st.Lost += n
		}
	}
	return st, rows.Err()
}

// pushEntry tells the entry's shopper live that it changed.
func (s *Raffles) pushEntry(e *model.RaffleEntry) {
	s.Events.PublishCoalescedKey(live.TopicUser(e.UserID), fmt.Sprintf("entry:%d", e.GoodsID), model.RaffleEntryEvent{Type: "entry", Entry: e})
}

// LeftoversOnSale tells whether the drawn raffle's units left are sold
// first come: once every entry in the draw's order has had its unit (fewer
// entries than units, or the waitlist ran out: the cursor is at the end)
// and every winner's order is made, a unit no entry can claim goes to an
// ordinary grab (the fair sale's gate lets it through, limit_per_user
// still applies). Until then a grab is refused not_drawn, so no grab takes
// a unit a winner or a waitlisted entry is owed. It stays so: the cursor
// never goes back and no entry wins after it reached the end.
func (s *Raffles) LeftoversOnSale(ctx context.Context, goodsID int64) (bool, error) {
	var drawn sql.NullInt64
	var next, entries int64
	err := s.SQL.R.QueryRowContext(ctx, `SELECT drawn_ms, next_place, entries FROM raffles WHERE goods_id = ?`, goodsID).Scan(&drawn, &next, &entries)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("raffle of goods %d: %w", goodsID, err)
	}
	if !drawn.Valid || next < entries {
		return false, nil
	}
	var waiting int64
	if err := s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*) FROM raffle_entries WHERE goods_id = ? AND state = ? AND order_id IS NULL`,
		goodsID, model.EntryWon).Scan(&waiting); err != nil {
		return false, fmt.Errorf("raffle of goods %d: %w", goodsID, err)
	}
	return waiting == 0, nil
}
