package fair

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// Priority codes of a waiting room: the merchant makes a batch (QueueCodes,
// audited as every admin change), each good once; a shopper who joins with
// one (JoinQueueCode) is admitted at once. The store keeps only each code's
// SHA-256, and one UPDATE spends it, so two shoppers racing with one code
// get one admission. The admission is kept in the shopper's field of q:u as
// a negative number, minus the moment it runs out (unix ms): a ticket with
// such a j is admitted whatever A says, and once it runs out unused reads
// closed like any lapsed admission (joining again puts the shopper at the
// back). Each such admission is in q:pri too (scored by when it runs out),
// for the no-shows' count (queue_health.go).

func queuePriorityKey(goodsID int64) string { return queueKey(goodsID) + ":pri" }

// codeHash is the stored form of a code: hex SHA-256 of its text, upper-cased and trimmed.
func codeHash(code string) string {
	d := sha256.Sum256([]byte(strings.ToUpper(strings.TrimSpace(code))))
	return hex.EncodeToString(d[:])
}

// newCode is a fresh code: 80 random bits in 16 base-32 letters and digits.
func newCode() string {
	b := make([]byte, 10)
	rand.Read(b)
	return base32.StdEncoding.EncodeToString(b)
}

// QueueCodes makes count (model.QueueCodes) priority codes for the caller's
// goods sold through a waiting room, with a note (at most 200 characters)
// for the merchant's records; the codes are answered once and kept only hashed.
func (s *Service) QueueCodes(ctx context.Context, by model.Claims, goodsID int64, count int, note string) ([]string, error) {
	g, err := s.Goods.Owned(ctx, by, goodsID)
	if err != nil {
		return nil, err
	}
	if err := goods.NotSoldBy(g, model.ModeQueue); err != nil {
		return nil, err
	}
	if !model.QueueCodes.Has(int64(count)) {
		return nil, db.Errorf(db.EINVALID, "count must be %d to %d", model.QueueCodes.Min, model.QueueCodes.Max)
	}
	note = strings.TrimSpace(note)
	if int64(utf8.RuneCountInString(note)) > model.QueueCodeNote.Max || !utf8.ValidString(note) {
		return nil, db.Errorf(db.EINVALID, "note must be at most %d characters", model.QueueCodeNote.Max)
	}
	codes := make([]string, count)
	now := s.Now().UnixMilli()
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		for i := range codes {
			codes[i] = newCode()
			if _, err := tx.ExecContext(ctx, `INSERT INTO queue_codes (code_hash, goods_id, note, created_by, created_ms) VALUES (?, ?, ?, ?, ?)`,
				codeHash(codes[i]), g.ID, note, by.UserID, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("make priority codes of goods %d: %w", g.ID, err)
	}
	return codes, nil
}

// errBadCode refuses a code that is unknown, used, or another goods'.
var errBadCode = db.Errorf(db.ECONFLICT, "this priority code is unknown, used already, or for other goods")

// queuePriorityScript admits a shopper at once: their q:u field becomes
// minus the moment the admission runs out, unless the room is closed.
//
// KEYS: q, q:u, q:adv, q:pri. ARGV: 1–5 as queueAdvanceLua, 6 the user, 7
// when the admission runs out (unix ms). Returns {n, F, A, closed, seed,
// rn} (F -1 before the start), then "ok" or "queue_closed".
var queuePriorityScript = redis.NewScript(queueAdvanceLua + `
local n, F, A, closed, seed, rn = advance(KEYS[1], KEYS[3])
local code = 'queue_closed'
if not closed then
  code = 'ok'
  redis.call('HSET', KEYS[2], ARGV[6], -tonumber(ARGV[7]))
  redis.call('ZADD', KEYS[4], tonumber(ARGV[7]), ARGV[6] .. ':' .. ARGV[7])
end
return {n, F or -1, A, closed and 1 or 0, seed, rn, code}
`)

// JoinQueueCode admits the shopper to the goods' waiting room at once with
// a priority code, spending it: an unknown, used or another goods' code is
// 409 conflict. The admission is good for the goods' admission_seconds from
// now (from the start, before it). No proof of work is asked: the code is
// the merchant's word.
func (s *Service) JoinQueueCode(ctx context.Context, userID, goodsID int64, code string) (*model.Ticket, error) {
	g, err := s.shopperGoods(ctx, goodsID)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	if !now.Before(g.EndAt) {
		return nil, db.ErrQueueClosed
	}
	if code == "" || len(code) > 64 {
		return nil, errBadCode
	}
	hash := codeHash(code)
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE queue_codes SET used_by = ?, used_ms = ? WHERE code_hash = ? AND goods_id = ? AND used_by IS NULL`,
		userID, now.UnixMilli(), hash, g.ID)
	if err != nil {
		return nil, fmt.Errorf("spend a priority code of goods %d: %w", g.ID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		// The shopper who spent it may send it again (a retry after a lost
		// answer or a 503): the admission is made again, the same one, and
		// the code stays theirs whatever the retry meets.
		var by, at sql.NullInt64
		err := s.SQL.R.QueryRowContext(ctx, `SELECT used_by, used_ms FROM queue_codes WHERE code_hash = ? AND goods_id = ?`, hash, g.ID).Scan(&by, &at)
		if err != nil || !by.Valid || by.Int64 != userID || !at.Valid {
			return nil, errBadCode
		}
		return s.admitPriority(ctx, g, userID, admittedUntil(g, time.UnixMilli(at.Int64)))
	}
	t, err := s.admitPriority(ctx, g, userID, admittedUntil(g, now))
	if err != nil {
		// Not admitted: the code is the shopper's to try again.
		if _, uerr := s.SQL.W.ExecContext(context.WithoutCancel(ctx), `UPDATE queue_codes SET used_by = NULL, used_ms = NULL WHERE code_hash = ? AND used_by = ?`,
			hash, userID); uerr != nil {
			s.Log.Warn("give a priority code back", "goods", g.ID, "err", uerr)
		}
		return nil, err
	}
	return t, nil
}

// admitPriority runs queuePriorityScript and answers the shopper's ticket.
func (s *Service) admitPriority(ctx context.Context, g *model.Goods, userID int64, until time.Time) (*model.Ticket, error) {
	args, err := s.queueArgs(ctx, g, s.Now(), -1)
	if err != nil {
		return nil, err
	}
	args = append(args, userID, until.UnixMilli())
	keys := []string{queueKey(g.ID), queueUsersKey(g.ID), queueAdvKey(g.ID), queuePriorityKey(g.ID)}
	dctx, durable := s.Durable(ctx) // the admission is told to its shopper
	res, err := queuePriorityScript.Run(dctx, durable, keys, args...).Slice()
	if err == nil && len(res) != queueHead+1 {
		err = fmt.Errorf("the priority script answered %v", res)
	}
	var v queueView
	if err == nil {
		v, err = parseQueueView(res[:queueHead])
	}
	if err != nil {
		return nil, fmt.Errorf("admit a priority code's shopper to goods %d: %w", g.ID, err)
	}
	if c, _ := res[queueHead].(string); c != "ok" {
		return nil, db.ErrQueueClosed
	}
	t, _, err := s.ticketFrom(ctx, g, userID, joinResult{code: "ok", j: -until.UnixMilli(), view: v})
	if err != nil {
		return nil, err
	}
	s.markActive(ctx, g.ID)
	return t, nil
}

// admittedUntil is when an admission given at now ends: admissionFor after
// now, or after the start when given before it.
func admittedUntil(g *model.Goods, now time.Time) time.Time {
	until := now
	if until.Before(g.StartAt) {
		until = g.StartAt
	}
	return until.Add(admissionFor(g))
}

// admissionFor is how long the goods' admissions are good for.
func admissionFor(g *model.Goods) time.Duration {
	secs := g.AdmissionSeconds
	if secs <= 0 {
		secs = model.DefaultAdmissionSeconds
	}
	return time.Duration(secs) * time.Second
}
