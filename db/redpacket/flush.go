package redpacket

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/db/sqldb"
)

// FlushClaims moves every packet's claims from its claimed list to the
// durable store; a packet leaves the flush set once it is finished or
// expired and its lists are empty, since no grab can add to them after that.
func (s *Service) FlushClaims(ctx context.Context) error {
	ids, err := s.FlushSetIDs(ctx, flushingKey)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		n, err := s.Flush(ctx, flushQueue(id), func(tx *sql.Tx, recs []string) error {
			return s.applyClaims(ctx, tx, id, recs)
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if n > 0 {
			// Lets the merchant's page refresh its flushed count.
			s.Events.PublishCoalesced(live.TopicRedPacket(id), model.RedPacketEvent{Type: "redpacket", RedPacketID: id, RemainingCount: s.Redis.LLen(ctx, unclaimedKey(id)).Val()})
		}
		errs = append(errs, s.retire(ctx, id))
	}
	return errors.Join(errs...)
}

// retire drops a packet from the flush set once nothing more can reach its queue.
func (s *Service) retire(ctx context.Context, id int64) error {
	var status string
	err := s.SQL.R.QueryRowContext(ctx, `SELECT status FROM redpackets WHERE id = ?`, id).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return s.Redis.SRem(ctx, flushingKey, id).Err()
	} else if err != nil || status == model.RedPacketActive {
		return err
	}
	// Finished: every share is claimed and flushed. Expired: the grab script
	// refused all grabs before SQLite said so. Either way the lists only shrink now.
	n, err := s.Redis.Exists(ctx, claimedKey(id), processingKey(id)).Result()
	if err != nil || n > 0 {
		return err
	}
	return s.Redis.SRem(ctx, flushingKey, id).Err()
}

// claimColumns are the columns of a staged batch of claims.
var claimColumns = []sqldb.Column{{Name: "seq", Type: "BIGINT"}, {Name: "user_id", Type: "BIGINT"}, {Name: "grabbed_ms", Type: "BIGINT"}}

// applyClaims writes a batch of claims in one set-based statement over the
// staged batch. It is idempotent: a claim fills its share only while the
// share is unclaimed and the user holds no other share of the packet, so a
// batch applied again after a crash changes nothing, and the claimed count
// grows only by the shares actually filled. The packet is finished when all are.
func (s *Service) applyClaims(ctx context.Context, tx *sql.Tx, id int64, recs []string) error {
	rows := make([][]any, 0, len(recs))
	seqs, users := map[int64]bool{}, map[int64]bool{}
	for _, rec := range recs {
		c, err := parseClaim(rec)
		if err != nil {
			// Skipping keeps one bad record from blocking the queue forever.
			s.Log.Error("flush red packet claim", "redpacket", id, "err", err)
			continue
		}
		// One statement sees the table as it was before it: a second claim
		// of one share or by one user in the same batch must not reach it.
		if seqs[c.Seq] || users[c.UserID] {
			s.Log.Error("flush red packet claim: share or user twice in one batch", "redpacket", id, "record", rec)
			continue
		}
		seqs[c.Seq], users[c.UserID] = true, true
		rows = append(rows, []any{c.Seq, c.UserID, c.GrabbedAt.UnixMilli()})
	}
	if len(rows) == 0 {
		return nil
	}
	if err := s.SQL.Stage(ctx, tx, "claims_batch", claimColumns, rows); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `UPDATE redpacket_shares SET user_id = b.user_id, grabbed_ms = b.grabbed_ms
		FROM claims_batch AS b
		WHERE redpacket_shares.redpacket_id = ? AND redpacket_shares.seq = b.seq
			AND redpacket_shares.user_id IS NULL AND redpacket_shares.refunded = 0
			AND NOT EXISTS (SELECT 1 FROM redpacket_shares AS held WHERE held.redpacket_id = ? AND held.user_id = b.user_id)`, id, id)
	if err != nil {
		return fmt.Errorf("flush %d claims of red packet %d: %w", len(rows), id, err)
	}
	filled, err := res.RowsAffected()
	if err != nil || filled == 0 {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE redpackets SET claimed_count = claimed_count + ?,
		status = CASE WHEN status = 'active' AND claimed_count + ? = count THEN 'finished' ELSE status END
		WHERE id = ?`, filled, filled, id)
	return err
}

// freezeScript marks a packet expired in Redis, so no grab succeeds from
// now on, and returns the shares still unclaimed, which can no longer change.
//
// KEYS[1] meta hash, KEYS[2] unclaimed list, KEYS[3] loading marker
// Returns "ok:<shares>" with the unclaimed shares ("seq:amount") joined by
// commas (none: "ok:"), not_loaded when the packet is not in Redis, or
// loading while it is being loaded (nothing changed).
var freezeScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[3]) == 1 then return 'loading' end
if redis.call('EXISTS', KEYS[1]) == 0 then return 'not_loaded' end
redis.call('HSET', KEYS[1], 'expired', '1')
return 'ok:' .. table.concat(redis.call('LRANGE', KEYS[2], 0, -1), ',')
`)

// Expire refunds a packet's unclaimed shares and marks it expired.
// It is idempotent and safe to run beside grabs and the flush: after the
// freeze no grab succeeds, so the unclaimed shares it read are exactly the
// ones to refund. A packet with every share claimed is left to finish.
func (s *Service) Expire(ctx context.Context, id int64) error {
	p, err := s.row(ctx, id)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return nil
	} else if err != nil {
		return err
	}
	if p.Status == model.RedPacketFinished {
		return nil
	}
	if s.Now().Before(p.ExpiresAt) {
		return fmt.Errorf("red packet %d expires at %s, not yet", id, p.ExpiresAt.Format(time.RFC3339))
	}
	reply, err := freezeScript.Run(ctx, s.Redis, []string{metaKey(id), unclaimedKey(id), loadingKey(id)}).Text()
	if err != nil {
		return fmt.Errorf("freeze red packet %d: %w", id, err)
	}
	var unclaimed []share
	loaded := true
	switch code, data, _ := strings.Cut(reply, ":"); code {
	case "ok":
		for _, rec := range strings.Split(data, ",") {
			if rec == "" {
				continue
			}
			sh, err := parseShare(rec)
			if err != nil {
				return fmt.Errorf("freeze red packet %d: %w", id, err)
			}
			unclaimed = append(unclaimed, sh)
		}
		// And the shares a failover withheld (ceiling.go): frozen, none is withheld now.
		withheld, err := s.Redis.LRange(ctx, withheldKey(id), 0, -1).Result()
		if err != nil {
			return fmt.Errorf("read withheld shares of red packet %d: %w", id, err)
		}
		for _, rec := range withheld {
			n, ok := splitInts(rec, 2)
			if !ok {
				return fmt.Errorf("red packet %d: malformed withheld share %q", id, rec)
			}
			unclaimed = append(unclaimed, share{seq: n[0], amount: n[1]})
		}
	case "not_loaded":
		loaded = false // Redis lost it: SQLite's unclaimed shares are the truth.
	case "loading":
		return fmt.Errorf("red packet %d is being loaded into redis; try again", id)
	default:
		return fmt.Errorf("freeze red packet %d: unexpected answer %q", id, reply)
	}
	if p.Status == model.RedPacketActive && (!loaded || len(unclaimed) > 0) {
		if err := s.SQL.Tx(ctx, func(tx *sql.Tx) error { return s.refund(ctx, tx, id, unclaimed, loaded) }); err != nil {
			return fmt.Errorf("refund red packet %d: %w", id, err)
		}
	}
	if loaded {
		pipe := s.Redis.TxPipeline()
		pipe.Del(ctx, unclaimedKey(id), withheldKey(id))
		pipe.HSet(ctx, metaKey(id), "remaining_cents", 0)
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("clear refunded shares of red packet %d: %w", id, err)
		}
	}
	s.Events.PublishCoalesced(live.TopicRedPacket(id), model.RedPacketEvent{Type: "redpacket", RedPacketID: id, RemainingCount: 0})
	return nil
}

// refund marks the unclaimed shares refunded (every share the database
// holds unclaimed when Redis lost the packet) and the packet expired.
func (s *Service) refund(ctx context.Context, tx *sql.Tx, id int64, unclaimed []share, loaded bool) error {
	if !loaded {
		if _, err := tx.ExecContext(ctx, `UPDATE redpacket_shares SET refunded = 1 WHERE redpacket_id = ? AND user_id IS NULL`, id); err != nil {
			return err
		}
	} else {
		rows := make([][]any, len(unclaimed))
		for i, sh := range unclaimed {
			rows[i] = []any{sh.seq}
		}
		if err := s.SQL.Stage(ctx, tx, "refund_batch", []sqldb.Column{{Name: "seq", Type: "BIGINT"}}, rows); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE redpacket_shares SET refunded = 1 FROM refund_batch AS b
			WHERE redpacket_shares.redpacket_id = ? AND redpacket_shares.seq = b.seq AND redpacket_shares.user_id IS NULL`, id); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, `UPDATE redpackets SET status = 'expired',
		refunded_cents = (SELECT COALESCE(SUM(amount_cents), 0) FROM redpacket_shares WHERE redpacket_id = ? AND refunded = 1)
		WHERE id = ? AND status = 'active'`, id, id)
	return err
}

// sweepGrace is how long after its expiry a packet waits for its own
// task before the sweep expires it.
const sweepGrace = time.Minute

// Sweep repairs what a crash or a lost Redis left behind: it loads
// active packets missing from Redis back from SQLite, and expires overdue
// packets whose expiry task never ran. Safe to run at any time.
func (s *Service) Sweep(ctx context.Context) error {
	if err := s.restoreAll(ctx); err != nil {
		return err
	}
	ids, err := sqldb.IDs(ctx, s.SQL.R, `SELECT id FROM redpackets WHERE status = ? AND expires_ms <= ?`,
		model.RedPacketActive, s.Now().Add(-sweepGrace).UnixMilli())
	if err != nil {
		return fmt.Errorf("find overdue red packets: %w", err)
	}
	var errs []error
	for _, id := range ids {
		errs = append(errs, s.Expire(ctx, id))
	}
	return errors.Join(errs...)
}

// restoreAll loads every active packet that Redis does not hold (an
// embedded Redis restarted, or a creation crashed before loading) from SQLite:
// the unclaimed shares and the flushed claims. Claims Redis held but had not
// flushed are gone with it; their shares are offered again.
func (s *Service) restoreAll(ctx context.Context) error {
	list, err := func() ([]*model.RedPacket, error) {
		rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+columns+` FROM redpackets WHERE status = ?`, model.RedPacketActive)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var list []*model.RedPacket
		for rows.Next() {
			p, err := scan(rows)
			if err != nil {
				return nil, err
			}
			list = append(list, p)
		}
		return list, rows.Err()
	}()
	if err != nil {
		return fmt.Errorf("list active red packets: %w", err)
	}
	var errs []error
	for _, p := range list {
		if n, err := s.Redis.Exists(ctx, metaKey(p.ID)).Result(); err != nil || n > 0 {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, s.restore(ctx, p))
	}
	return errors.Join(errs...)
}

func (s *Service) restore(ctx context.Context, p *model.RedPacket) error {
	token := "restore:" + rdb.NewRequestID()
	ok, err := rdb.TakeOwned(ctx, s.Redis, loadingKey(p.ID), token, loadLease)
	if err != nil || !ok {
		return err // someone else is loading it
	}
	defer rdb.ReleaseOwned(context.WithoutCancel(ctx), s.Redis, loadingKey(p.ID), token)
	if n, err := s.Redis.Exists(ctx, metaKey(p.ID)).Result(); err != nil || n > 0 {
		return err
	}
	// A flusher may still hold claims of the Redis that lost it: fenced
	// first, they have committed before the shares are read, or never
	// commit (db/backend/lease.go, step 5).
	if err := s.FenceLanes(ctx, flushQueue(p.ID)); err != nil {
		return fmt.Errorf("restore red packet %d: %w", p.ID, err)
	}
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT seq, amount_cents, user_id, grabbed_ms FROM redpacket_shares
		WHERE redpacket_id = ? AND refunded = 0 ORDER BY seq`, p.ID)
	if err != nil {
		return fmt.Errorf("read shares of red packet %d: %w", p.ID, err)
	}
	defer rows.Close()
	var unclaimed []share
	claimedBy := map[int64]string{}
	for rows.Next() {
		var sh share
		var uid sql.NullInt64
		var at sql.NullInt64
		if err := rows.Scan(&sh.seq, &sh.amount, &uid, &at); err != nil {
			return err
		}
		if uid.Valid {
			claimedBy[uid.Int64] = mineFields.Encode(&mineRec{request: "restored", seq: sh.seq, amount: sh.amount, grabbed: at.Int64})
		} else {
			unclaimed = append(unclaimed, sh)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	// The unclaimed shares below the ceiling may have been given by the
	// lost node: withheld, never given again (ceiling.go).
	ceiling, err := s.IssueCeiling(ctx, shareRun(p.ID))
	if err != nil {
		return fmt.Errorf("read the share ceiling of red packet %d: %w", p.ID, err)
	}
	var withheld []any
	for len(unclaimed) > 0 && unclaimed[0].seq < ceiling {
		withheld, unclaimed = append(withheld, unclaimed[0].String()), unclaimed[1:]
	}
	pipe := s.Redis.TxPipeline()
	pipe.Del(ctx, withheldKey(p.ID))
	if len(withheld) > 0 {
		pipe.RPush(ctx, withheldKey(p.ID), withheld...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("withhold shares of red packet %d: %w", p.ID, err)
	}
	s.Log.Warn("restoring red packet into redis from the database", "redpacket", p.ID, "unclaimed", len(unclaimed), "claimed", len(claimedBy), "withheld", len(withheld))
	return s.load(ctx, p, unclaimed, claimedBy)
}
