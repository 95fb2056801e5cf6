package raffle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/seckill/seckill/db/live"
	"time"

	"github.com/hibiken/asynq"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/fair/verify"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
	"github.com/seckill/seckill/tasks"
)

// The draw and what follows it. Exactly once, however often and wherever it
// runs: the draw marks the raffle drawn in the same transaction that writes
// its order (a second run finds the mark and does nothing); a winner's
// order is the grab script's on their behalf under the request ID
// raffleRequest (a rerun gets the same order back), recorded on the entry
// only while the entry has none (the inbox notice rides in that
// transaction); a unit passed on advances the raffle's cursor in the
// transaction that marks the previous holder's entry lost, guarded by that
// entry still holding that order.

// NotificationRaffleWon is the inbox kind of a raffle win (in the draw or by a unit passed on).
const NotificationRaffleWon = "raffle_won"

// DrawRaffle makes the raffle's draw once its sale has started: the
// entries closed (their root frozen, closeEntries), the beacon round
// fetched when the raffle names one, the entries in the draw's order, the
// first stock of them won, the rest waitlisted, the seed revealed, then the
// winners' orders. It returns whether this call drew; before the start, on
// goods no longer a raffle and once drawn it does nothing but settle
// (SettleRaffle). While the beacon round is not out it does not draw and
// schedules itself again (the sweep tries too).
func (s *Raffles) DrawRaffle(ctx context.Context, goodsID int64) (bool, error) {
	return s.drawRaffle(ctx, goodsID, true)
}

func (s *Raffles) drawRaffle(ctx context.Context, goodsID int64, patient bool) (bool, error) {
	g, err := s.Goods.GoodsRow(ctx, goodsID)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return false, nil
	} else if err != nil {
		return false, err
	}
	now := s.Now()
	if g.Mode != model.ModeRaffle || now.Before(g.StartAt) {
		return false, nil
	}
	if err := s.openRaffle(ctx, g); err != nil {
		return false, err
	}
	c, err := s.closeEntries(ctx, g)
	if err != nil {
		return false, err
	}
	if c.drawn {
		return false, s.SettleRaffle(ctx, goodsID)
	}
	beacon := ""
	if c.round.Valid {
		br, wait := s.beaconFor(ctx, g, c.round.Int64, patient)
		if br == nil {
			if patient {
				s.scheduleDrawIn(ctx, g, wait)
			}
			return false, nil
		}
		beacon = br.Randomness
	}
	var order []int64
	var winners int64
	drawn := false
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		// The mark first: it takes the raffle's row, which every entry takes first too.
		res, err := tx.ExecContext(ctx, `UPDATE raffles SET drawn_ms = ? WHERE goods_id = ? AND drawn_ms IS NULL`, now.UnixMilli(), goodsID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // drawn before
		}
		var seed string
		var sealed sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT seed, seed_sealed FROM raffles WHERE goods_id = ?`, goodsID).Scan(&seed, &sealed); err != nil {
			return err
		}
		if sealed.Valid { // raffles opened before seeds were sealed keep theirs in seed
			if seed, err = s.openSeed(goodsID, sealed.String); err != nil {
				return err
			}
		}
		users, err := entrants(ctx, tx, goodsID)
		if err != nil {
			return err
		}
		if root := verify.EntriesTree(goodsID, users).RootHex(); root != c.root {
			return fmt.Errorf("the entries make root %s, not the %s frozen at the close", root, c.root)
		}
		randomness := verify.Randomness(seed, c.root, beacon)
		order = verify.DrawOrder(randomness, users)
		winners = min(g.Stock, int64(len(order)))
		if err := s.placeEntries(ctx, tx, goodsID, order); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE raffle_entries SET state = CASE WHEN place < ? THEN ? ELSE ? END WHERE goods_id = ?`,
			winners, model.EntryWon, model.EntryWaitlisted, goodsID); err != nil {
			return err
		}
		var b *string
		if c.round.Valid {
			b = &beacon
		}
		if _, err := tx.ExecContext(ctx, `UPDATE raffles SET seed = ?, beacon = ?, randomness = ?, entries = ?, winners = ?, next_place = ? WHERE goods_id = ?`,
			seed, b, randomness, len(order), winners, winners, goodsID); err != nil {
			return err
		}
		drawn = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("draw raffle of goods %d: %w", goodsID, err)
	}
	for i, u := range order[min(int(winners), len(order)):] { // the winners hear when their order is made
		s.pushEntry(&model.RaffleEntry{GoodsID: goodsID, UserID: u, State: model.EntryWaitlisted, Position: winners + int64(i) + 1})
	}
	return drawn, s.SettleRaffle(ctx, goodsID)
}

// beaconFor fetches the raffle's beacon round (patient: with retries), or
// says how long to wait before trying again: until the round is due, then
// longer the longer it is late (up to the chain's period).
func (s *Raffles) beaconFor(ctx context.Context, g *model.Goods, round int64, patient bool) (*verify.BeaconRound, time.Duration) {
	if s.Beacon == nil {
		s.Log.Error("a raffle's draw waits for its beacon round, but the server has no RAFFLE_BEACON_URL", "goods", g.ID, "round", round)
		return nil, time.Minute
	}
	info, err := s.Beacon.Info(ctx)
	if err != nil {
		s.Log.Warn("a raffle's draw waits: the beacon does not answer", "goods", g.ID, "round", round, "err", err)
		return nil, 5 * time.Second
	}
	now, due := s.Now(), info.RoundTime(round)
	if now.Before(due) {
		return nil, due.Sub(now) + 500*time.Millisecond
	}
	fetch := s.Beacon.Round
	if patient {
		fetch = s.Beacon.RoundRetry
	}
	br, err := fetch(ctx, round)
	if err != nil {
		if !errors.Is(err, verify.ErrBeaconNotYet) {
			s.Log.Warn("a raffle's draw waits: its beacon round", "goods", g.ID, "round", round, "err", err)
		}
		return nil, min(max(now.Sub(due)/4, time.Second), time.Duration(info.Period)*time.Second)
	}
	return br, 0
}

// scheduleDrawIn enqueues the raffle's draw again in wait (the draw waits
// for its beacon round); the sweep tries meanwhile too.
func (s *Raffles) scheduleDrawIn(ctx context.Context, g *model.Goods, wait time.Duration) {
	if s.Tasks == nil {
		return
	}
	at := time.Now().Add(wait) // Asynq runs tasks by the wall clock
	id := fmt.Sprintf("%s:again:%d", tasks.RaffleDrawTaskID(g.ID, g.StartAt), at.Unix())
	if err := s.Schedule(ctx, tasks.NewRaffleDrawTask(g.ID), asynq.ProcessAt(at), asynq.TaskID(id)); err != nil {
		s.Log.Warn("schedule a raffle's draw again; the sweep draws it", "goods", g.ID, "err", err)
	}
}

// placeColumns are the staged places of the draw's order.
var placeColumns = []sqldb.Column{{Name: "user_id", Type: "BIGINT"}, {Name: "place", Type: "BIGINT"}}

// placeEntries writes each entry's place in the draw's order within tx, in
// one statement over the places staged.
func (s *Raffles) placeEntries(ctx context.Context, tx *sql.Tx, goodsID int64, order []int64) error {
	rows := make([][]any, len(order))
	for i, u := range order {
		rows[i] = []any{u, i}
	}
	if err := s.SQL.Stage(ctx, tx, "raffle_places", placeColumns, rows); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE raffle_entries SET place = b.place FROM raffle_places AS b
		WHERE raffle_entries.goods_id = ? AND raffle_entries.user_id = b.user_id`, goodsID)
	return err
}

// entrants lists the user IDs of the raffle's entries within tx.
func entrants(ctx context.Context, tx *sql.Tx, goodsID int64) ([]int64, error) {
	return sqldb.IDs(ctx, tx, `SELECT user_id FROM raffle_entries WHERE goods_id = ?`, goodsID)
}

// leftoversEvent tells a goods page that the raffle's units left are on sale first come.
type leftoversEvent struct {
	Type    string `json:"type"` // "raffle_leftovers"
	GoodsID int64  `json:"goods_id"`
}

// SettleRaffle brings the drawn raffle's won entries in line with their
// orders: it makes the orders not made yet, marks the paid ones settled and
// passes the unit of each order that expired, was cancelled or failed to the
// next entry in the draw's order (whose order it then makes). Safe to run
// any number of times, side by side.
func (s *Raffles) SettleRaffle(ctx context.Context, goodsID int64) error {
	g, err := s.Goods.GoodsRow(ctx, goodsID)
	if err != nil {
		return err
	}
	type won struct{ user, order, place int64 }
	var open []won
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT user_id, COALESCE(order_id, 0), place FROM raffle_entries
		WHERE goods_id = ? AND state = ? AND settled = 0 ORDER BY place`, goodsID, model.EntryWon)
	if err != nil {
		return err
	}
	for rows.Next() {
		var w won
		if err := rows.Scan(&w.user, &w.order, &w.place); err != nil {
			rows.Close()
			return err
		}
		open = append(open, w)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(open) > 0 {
		// Settling can put the leftovers on sale, which the goods page
		// shows: the shoppers' catalog reloads (db/goods Catalog).
		defer func() {
			if err := s.Events.CatalogChanged(ctx); err != nil {
				s.Log.Warn("announce a catalog change", "goods", goodsID, "err", err)
			}
			// The goods page turns to the leftovers' Grab button live
			// (static/goods.js reloads it once; after the catalog's
			// announcement, on the same channel, so the page it gets shows them).
			if on, err := s.LeftoversOnSale(ctx, goodsID); err == nil && on {
				if err := s.Events.Publish(ctx, live.TopicGoods(goodsID), leftoversEvent{Type: "raffle_leftovers", GoodsID: goodsID}); err != nil {
					s.Log.Warn("announce a raffle's leftovers", "goods", goodsID, "err", err)
				}
			}
		}()
	}
	var errs []error
	for _, w := range open {
		if w.order == 0 {
			errs = append(errs, s.raffleOrder(ctx, g, w.user, w.place))
			continue
		}
		o, err := s.Goods.OrderOf(ctx, w.order)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch o.Status {
		case model.OrderUnpaid:
		case model.OrderPaid, model.OrderRefunded: // the unit was sold: a refund later gives it back to no one
			_, err := s.SQL.W.ExecContext(ctx, `UPDATE raffle_entries SET settled = 1 WHERE goods_id = ? AND user_id = ? AND order_id = ?`,
				goodsID, w.user, w.order)
			errs = append(errs, err)
		default: // expired, cancelled or failed: the unit passes on
			errs = append(errs, s.passOn(ctx, g, w.user, w.order))
		}
	}
	return errors.Join(errs...)
}

// passOn marks the user's entry lost (its order ended unpaid) and gives
// its unit to the next entry in the draw's order, exactly once: both in one
// transaction that goes ahead only while the entry still holds that order.
// When the draw's order is exhausted, or the sale has ended, the unit stays
// unsold: a raffle goods is never raced.
func (s *Raffles) passOn(ctx context.Context, g *model.Goods, userID, orderID int64) error {
	var next, place int64
	lost := false
	err := s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE raffle_entries SET state = ? WHERE goods_id = ? AND user_id = ? AND state = ? AND order_id = ?`,
			model.EntryLost, g.ID, userID, model.EntryWon, orderID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // passed on by another run
		}
		lost = true
		if !s.Now().Before(g.EndAt) {
			return nil
		}
		err = tx.QueryRowContext(ctx, `UPDATE raffles SET next_place = next_place + 1, passed = passed + 1
			WHERE goods_id = ? AND next_place < entries RETURNING next_place - 1`, g.ID).Scan(&place)
		if errors.Is(err, sql.ErrNoRows) {
			return nil // the draw's order is exhausted
		} else if err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `UPDATE raffle_entries SET state = ? WHERE goods_id = ? AND place = ? RETURNING user_id`,
			model.EntryWon, g.ID, place).Scan(&next)
	})
	if err != nil {
		return fmt.Errorf("pass on order %d of raffle %d: %w", orderID, g.ID, err)
	}
	if lost {
		s.pushEntry(&model.RaffleEntry{GoodsID: g.ID, UserID: userID, State: model.EntryLost, OrderID: orderID})
	}
	if next == 0 {
		return nil
	}
	return s.raffleOrder(ctx, g, next, place)
}

// raffleOrder makes the won entry's order (an order the user has of the
// goods already is theirs from the raffle: a grab on a raffle is refused),
// records it on the entry and tells the shopper: live (the order event and
// the entry's) and in the inbox.
func (s *Raffles) raffleOrder(ctx context.Context, g *model.Goods, userID, place int64) error {
	o, err := s.Goods.LatestOrder(ctx, g.ID, userID)
	if err != nil {
		return err
	}
	if o == nil {
		o, err = s.Goods.Award(ctx, userID, g.ID)
		switch db.ErrorCode(err) {
		case "":
		case db.ELIMITREACHED: // another run's grab won meanwhile
			if o, err = s.Goods.LatestOrder(ctx, g.ID, userID); err == nil && o == nil {
				err = fmt.Errorf("raffle %d: user %d holds an order that cannot be found", g.ID, userID)
			}
			if err != nil {
				return err
			}
		case db.EENDED, db.ENOTFOUND: // the sale is over (or its merchant hid it): no order comes
			_, err := s.SQL.W.ExecContext(ctx, `UPDATE raffle_entries SET state = ? WHERE goods_id = ? AND user_id = ? AND state = ? AND order_id IS NULL`,
				model.EntryLost, g.ID, userID, model.EntryWon)
			if err == nil {
				s.pushEntry(&model.RaffleEntry{GoodsID: g.ID, UserID: userID, State: model.EntryLost, Position: place + 1})
			}
			return err
		default:
			return fmt.Errorf("raffle %d: order of user %d: %w", g.ID, userID, err)
		}
	}
	var told map[int64]model.Notification
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE raffle_entries SET order_id = ? WHERE goods_id = ? AND user_id = ? AND state = ? AND order_id IS NULL`,
			o.ID, g.ID, userID, model.EntryWon)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // recorded by another run, which told the shopper
		}
		told, err = inbox.Add(ctx, tx, []int64{userID}, model.Notification{Kind: NotificationRaffleWon, GoodsID: g.ID,
			CreatedAt: s.Now().UTC(), Message: raffleWonText(g, o, place)})
		return err
	})
	if err != nil {
		return fmt.Errorf("raffle %d: record order %d: %w", g.ID, o.ID, err)
	}
	if told == nil {
		return nil
	}
	s.Goods.PushOrder(o)
	s.pushEntry(&model.RaffleEntry{GoodsID: g.ID, UserID: userID, State: model.EntryWon, Position: place + 1, OrderID: o.ID})
	if err := s.Events.PublishAll(ctx, inbox.Messages(told)); err != nil {
		s.Log.Warn("push a raffle win's notification live", "goods", g.ID, "user", userID, "err", err) // the inbox has it
	}
	return nil
}

// raffleWonText is the inbox notice of a raffle win.
func raffleWonText(g *model.Goods, o *model.Order, place int64) string {
	how := "You won the raffle for"
	if place >= g.Stock {
		how = "A unit passed on to you in the raffle for"
	}
	return fmt.Sprintf("%s “%s”: order #%s is yours. Pay it by %s UTC, or it passes to the next entry.",
		how, g.Title, model.OrderNumber(o.ID), o.ExpiresAt.UTC().Format("2006-01-02 15:04"))
}

// SweepRaffles draws every raffle whose sale has started and is not drawn
// (its task missed: no worker then, the start moved), and settles every
// drawn raffle with won entries not settled. The periodic raffle:sweep runs it.
func (s *Raffles) SweepRaffles(ctx context.Context) error {
	due, err := sqldb.IDs(ctx, s.SQL.R, `SELECT r.goods_id FROM raffles r JOIN goods g ON g.id = r.goods_id JOIN slots sl ON sl.id = g.slot_id
		WHERE r.drawn_ms IS NULL AND g.mode = ? AND sl.start_ms <= ?`, model.ModeRaffle, s.Now().UnixMilli())
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range due {
		_, err := s.drawRaffle(ctx, id, false)
		errs = append(errs, err)
	}
	open, err := sqldb.IDs(ctx, s.SQL.R, `SELECT DISTINCT goods_id FROM raffle_entries WHERE state = ? AND settled = 0`, model.EntryWon)
	if err != nil {
		return err
	}
	for _, id := range open {
		errs = append(errs, s.SettleRaffle(ctx, id))
	}
	return errors.Join(errs...)
}
