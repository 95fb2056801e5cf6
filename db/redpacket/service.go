// Package redpacket is the red packets: a merchant's total split into shares
// at creation (the double-mean rule in split.go), grabbed by one Lua script
// with no SQL, the claims flushed to SQLite in batches, the unclaimed shares
// refunded at expiry, and a sweep that restores what a lost Redis or a crash
// left behind.
package redpacket

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
)

// Service is the red packets' storage and rules over the shared backend.
type Service struct {
	*backend.Backend
	// Rand splits packets; nil means math/rand/v2.
	Rand Int64Source
}

// loadLease is how long a packet being loaded into Redis is left alone by
// the restore sweep; a creation that crashed is completed after it.
const loadLease = 2 * time.Minute

// msTime reads a time SQLite or Redis holds as unix milliseconds.
func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

type mathRand struct{}

func (mathRand) Int64N(n int64) int64 { return rand.Int64N(n) }

func (s *Service) source() Int64Source {
	if s.Rand != nil {
		return s.Rand
	}
	return mathRand{}
}

// share is one unclaimed share as it sits in Redis: "seq:amount".
type share struct{ seq, amount int64 }

// Check returns the problems of a new packet's fields, creating nothing: a
// form that could not read some fields shows the others' problems too.
func (s *Service) Check(in model.NewRedPacket) error {
	_, err := Validate(&in)
	return err
}

// Create validates and splits a merchant's packet, writes it and its shares
// to the durable store in one transaction (the shares in one COPY on
// PostgreSQL), loads the shares into Redis and schedules
// the expiry. Refused input changes nothing.
func (s *Service) Create(ctx context.Context, ownerID int64, in model.NewRedPacket) (_ *model.RedPacket, err error) {
	defer s.announce(ctx, &err)
	ttl, err := Validate(&in)
	if err != nil {
		return nil, err
	}
	amounts := Split(in.TotalCents, in.Count, in.Mode, s.source())
	now := s.Now().UTC().Truncate(time.Millisecond)
	p := &model.RedPacket{
		Title: in.Title, TotalCents: in.TotalCents, Count: in.Count, Mode: in.Mode,
		RemainingCount: in.Count, RemainingCents: in.TotalCents, Status: model.RedPacketActive,
		ExpiresAt: now.Add(ttl), OwnerID: ownerID, CreatedAt: now,
	}
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `INSERT INTO redpackets (owner_id, title, total_cents, count, mode, expires_ms, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			ownerID, p.Title, p.TotalCents, p.Count, p.Mode, p.ExpiresAt.UnixMilli(), now.UnixMilli()).Scan(&p.ID)
		if err != nil {
			return err
		}
		rows := make([][]any, len(amounts))
		for i, a := range amounts {
			rows[i] = []any{p.ID, int64(i), a}
		}
		if _, err := s.SQL.InsertRows(ctx, tx, "redpacket_shares", []string{"redpacket_id", "seq", "amount_cents"}, rows); err != nil {
			return err
		}
		// Held until Redis has the packet, so the restore sweep never loads it twice.
		return s.Redis.Set(ctx, loadingKey(p.ID), "create", loadLease).Err()
	})
	if err != nil {
		return nil, fmt.Errorf("create red packet: %w", err)
	}
	shares := make([]share, len(amounts))
	for i, a := range amounts {
		shares[i] = share{int64(i), a}
	}
	if err := s.load(ctx, p, shares, nil); err != nil {
		s.discard(context.WithoutCancel(ctx), p.ID)
		return nil, fmt.Errorf("load red packet %d into redis: %w", p.ID, err)
	}
	s.Redis.Del(ctx, loadingKey(p.ID))
	s.scheduleExpiry(ctx, p)
	return p, nil
}

// load puts a packet into Redis: the unclaimed shares in grab order
// (pipelined batches), the claims already known (restores only), the flush
// set, and last the meta hash, which is what makes the packet grabbable.
func (s *Service) load(ctx context.Context, p *model.RedPacket, unclaimed []share, claimedBy map[int64]string) error {
	const perPush, perTrip = 1000, 20
	if err := s.Redis.Del(ctx, unclaimedKey(p.ID)).Err(); err != nil {
		return err
	}
	var left int64
	for _, sh := range unclaimed {
		left += sh.amount
	}
	for start := 0; start < len(unclaimed); start += perPush * perTrip {
		pipe := s.Redis.Pipeline()
		for i := start; i < len(unclaimed) && i < start+perPush*perTrip; i += perPush {
			batch := make([]any, 0, perPush)
			for _, sh := range unclaimed[i:min(i+perPush, len(unclaimed))] {
				batch = append(batch, sh.String())
			}
			pipe.RPush(ctx, unclaimedKey(p.ID), batch...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	pipe := s.Redis.Pipeline()
	if len(claimedBy) > 0 {
		vals := make([]any, 0, 2*len(claimedBy))
		for uid, rec := range claimedBy {
			vals = append(vals, uid, rec)
		}
		pipe.HSet(ctx, claimedByKey(p.ID), vals...)
	}
	pipe.SAdd(ctx, flushingKey, p.ID)
	pipe.HSet(ctx, metaKey(p.ID), "expires_ms", p.ExpiresAt.UnixMilli(), "remaining_cents", left, "count", p.Count)
	_, err := pipe.Exec(ctx)
	return err
}

// discard undoes a creation that could not reach Redis.
func (s *Service) discard(ctx context.Context, id int64) {
	s.Redis.Del(ctx, append(packetKeys(id), loadingKey(id))...)
	s.Redis.SRem(ctx, flushingKey, id)
	if _, err := s.SQL.W.ExecContext(ctx, `DELETE FROM redpackets WHERE id = ?`, id); err != nil {
		s.Log.Error("discard red packet", "redpacket", id, "err", err)
	}
}

const columns = `id, owner_id, title, total_cents, count, mode, status, claimed_count, refunded_cents, expires_ms, created_ms`

func scan(row interface{ Scan(...any) error }) (*model.RedPacket, error) {
	var p model.RedPacket
	var expires, created int64
	if err := row.Scan(&p.ID, &p.OwnerID, &p.Title, &p.TotalCents, &p.Count, &p.Mode, &p.Status, &p.ClaimedCount, &p.RefundedCents, &expires, &created); err != nil {
		return nil, err
	}
	p.ExpiresAt, p.CreatedAt = msTime(expires), msTime(created)
	return &p, nil
}

// row reads a packet's durable record, without live figures.
func (s *Service) row(ctx context.Context, id int64) (*model.RedPacket, error) {
	p, err := scan(s.SQL.R.QueryRowContext(ctx, `SELECT `+columns+` FROM redpackets WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, db.Errorf(db.ENOTFOUND, "red packet not found")
	} else if err != nil {
		return nil, fmt.Errorf("read red packet %d: %w", id, err)
	}
	return p, nil
}

func (s *Service) list(ctx context.Context, where string, args ...any) ([]*model.RedPacket, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+columns+` FROM redpackets WHERE `+where+` ORDER BY id DESC LIMIT 200`, args...)
	if err != nil {
		return nil, fmt.Errorf("list red packets: %w", err)
	}
	defer rows.Close()
	list := []*model.RedPacket{}
	for rows.Next() {
		p, err := scan(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return list, s.live(ctx, list)
}

// live fills in the remaining figures and the status as of now: from Redis
// while a packet is active, zero once it is finished or refunded.
func (s *Service) live(ctx context.Context, list []*model.RedPacket) error {
	pipe := s.Redis.Pipeline()
	metas := map[int64]*redis.SliceCmd{}
	lens := map[int64]*redis.IntCmd{}
	for _, p := range list {
		if p.Status == model.RedPacketActive {
			metas[p.ID] = pipe.HMGet(ctx, metaKey(p.ID), "expires_ms", "remaining_cents", "expired")
			lens[p.ID] = pipe.LLen(ctx, unclaimedKey(p.ID))
		}
	}
	if len(metas) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("read red packets from redis: %w", err)
		}
	}
	now := s.Now()
	for _, p := range list {
		p.RemainingCount, p.RemainingCents = 0, 0
		if p.Status != model.RedPacketActive {
			continue
		}
		vals := metas[p.ID].Val()
		if len(vals) < 3 || vals[0] == nil {
			// Not in Redis (being created, or Redis lost it and the sweep will restore it): count from SQLite.
			err := s.SQL.R.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(amount_cents), 0) FROM redpacket_shares WHERE redpacket_id = ? AND user_id IS NULL AND refunded = 0`, p.ID).
				Scan(&p.RemainingCount, &p.RemainingCents)
			if err != nil {
				return err
			}
		} else {
			p.RemainingCount = lens[p.ID].Val()
			p.RemainingCents, _ = strconv.ParseInt(fmt.Sprint(vals[1]), 10, 64)
		}
		// The expiry task refunds within about a second; until then the packet already refuses grabs.
		if p.RemainingCount > 0 && (!now.Before(p.ExpiresAt) || (len(vals) == 3 && vals[2] != nil)) {
			p.Status = model.RedPacketExpired
		}
	}
	return nil
}

// Get returns a packet with its live remaining figures.
func (s *Service) Get(ctx context.Context, id int64) (*model.RedPacket, error) {
	p, err := s.row(ctx, id)
	if err != nil {
		return nil, err
	}
	return p, s.live(ctx, []*model.RedPacket{p})
}

// Active lists the packets shoppers may still open, newest first.
func (s *Service) Active(ctx context.Context) ([]*model.RedPacket, error) {
	list, err := s.list(ctx, `status = ? AND expires_ms > ?`, model.RedPacketActive, s.Now().UnixMilli())
	if err != nil {
		return nil, err
	}
	active := list[:0]
	for _, p := range list {
		if p.Status == model.RedPacketActive {
			active = append(active, p)
		}
	}
	return active, nil
}

// Own lists the packets a merchant made (every packet for an admin), newest first.
func (s *Service) Own(ctx context.Context, actor model.Claims) ([]*model.RedPacket, error) {
	if actor.Role == model.RoleAdmin {
		return s.list(ctx, `1 = 1`)
	}
	return s.list(ctx, `owner_id = ?`, actor.UserID)
}

// owned returns the packet when the actor may manage it; another merchant's
// packet is not found, as if it did not exist.
func (s *Service) owned(ctx context.Context, actor model.Claims, id int64) (*model.RedPacket, error) {
	p, err := s.row(ctx, id)
	if err != nil {
		return nil, err
	}
	if actor.Role != model.RoleAdmin && p.OwnerID != actor.UserID {
		return nil, db.Errorf(db.ENOTFOUND, "red packet not found")
	}
	return p, nil
}

// Stats returns a packet's live and durable claim figures for its merchant.
func (s *Service) Stats(ctx context.Context, actor model.Claims, id int64) (*model.RedPacketStats, error) {
	p, err := s.owned(ctx, actor, id)
	if err != nil {
		return nil, err
	}
	return s.stats(ctx, p)
}

func (s *Service) stats(ctx context.Context, p *model.RedPacket) (*model.RedPacketStats, error) {
	claimed, err := s.Redis.HLen(ctx, claimedByKey(p.ID)).Result()
	if err != nil {
		return nil, fmt.Errorf("count claims of red packet %d: %w", p.ID, err)
	}
	if err := s.live(ctx, []*model.RedPacket{p}); err != nil {
		return nil, err
	}
	// Claims outlive Redis only in SQLite (after a restore from an empty Redis).
	claimed = max(claimed, p.ClaimedCount)
	return &model.RedPacketStats{
		Count: p.Count, Claimed: claimed, Flushed: p.ClaimedCount,
		RemainingCount: p.RemainingCount, RemainingCents: p.RemainingCents, RefundedCents: p.RefundedCents,
	}, nil
}

// Grabs lists who got how much, grabs not yet flushed included.
func (s *Service) Grabs(ctx context.Context, id int64) (*model.RedPacketGrabs, error) {
	if _, err := s.row(ctx, id); err != nil {
		return nil, err
	}
	return s.grabs(ctx, id)
}

func (s *Service) grabs(ctx context.Context, id int64) (*model.RedPacketGrabs, error) {
	// Read Redis first, atomically: the flush deletes a record from Redis only
	// after committing it to SQLite, so every claim is in one place or the other.
	var processing, pending *redis.StringSliceCmd
	_, err := s.Redis.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		processing = pipe.LRange(ctx, processingKey(id), 0, -1)
		pending = pipe.LRange(ctx, claimedKey(id), 0, -1)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read pending claims of red packet %d: %w", id, err)
	}
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT s.seq, s.user_id, u.username, s.amount_cents, s.grabbed_ms
		FROM redpacket_shares s JOIN users u ON u.id = s.user_id WHERE s.redpacket_id = ? AND s.user_id IS NOT NULL`, id)
	if err != nil {
		return nil, fmt.Errorf("read claims of red packet %d: %w", id, err)
	}
	defer rows.Close()
	seen := map[int64]bool{}
	grabs := []model.RedPacketClaim{}
	for rows.Next() {
		var c model.RedPacketClaim
		var at int64
		if err := rows.Scan(&c.Seq, &c.UserID, &c.Username, &c.AmountCents, &at); err != nil {
			return nil, err
		}
		c.GrabbedAt = msTime(at)
		seen[c.UserID] = true
		grabs = append(grabs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var missing []int64
	for _, rec := range append(processing.Val(), pending.Val()...) {
		c, err := parseClaim(rec)
		if err != nil || seen[c.UserID] {
			continue
		}
		seen[c.UserID] = true
		grabs = append(grabs, *c)
		missing = append(missing, c.UserID)
	}
	names, err := s.usernames(ctx, missing)
	if err != nil {
		return nil, err
	}
	for i := range grabs {
		if grabs[i].Username == "" {
			grabs[i].Username = names[grabs[i].UserID]
		}
	}
	sort.Slice(grabs, func(i, j int) bool { return grabs[i].Seq < grabs[j].Seq })
	out := &model.RedPacketGrabs{Grabs: grabs}
	if l := luckiest(grabs); l >= 0 {
		out.LuckiestUserID = &grabs[l].UserID
	}
	return out, nil
}

// luckiest is the index of the largest grab, the earliest among equals, or
// -1 when there are none or every share is the same (an equal-shares
// packet has no luckiest).
func luckiest(grabs []model.RedPacketClaim) int {
	best, differ := -1, false
	for i, g := range grabs {
		if best >= 0 && g.AmountCents != grabs[best].AmountCents {
			differ = true
		}
		if best < 0 || g.AmountCents > grabs[best].AmountCents {
			best = i
		}
	}
	if !differ {
		return -1
	}
	return best
}

// usernames looks up the names of the given users.
func (s *Service) usernames(ctx context.Context, ids []int64) (map[int64]string, error) {
	names := map[int64]string{}
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := s.SQL.R.QueryContext(ctx, `SELECT id, username FROM users WHERE id IN (?`+strings.Repeat(",?", len(chunk)-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("look up usernames: %w", err)
		}
		for rows.Next() {
			var id int64
			var name string
			if err := rows.Scan(&id, &name); err != nil {
				rows.Close()
				return nil, err
			}
			names[id] = name
		}
		rows.Close()
	}
	return names, nil
}

// splitInts reads exactly n colon-separated integers, the fields of the
// scripts' answers (their records are read by record.go).
func splitInts(s string, n int) ([]int64, bool) {
	f := strings.Split(s, ":")
	if len(f) != n {
		return nil, false
	}
	out := make([]int64, n)
	for i, v := range f {
		var err error
		if out[i], err = strconv.ParseInt(v, 10, 64); err != nil {
			return nil, false
		}
	}
	return out, true
}

// Page gathers what the shopper page of a packet shows; userID 0 is an anonymous visitor.
func (s *Service) Page(ctx context.Context, userID, id int64) (*model.RedPacketView, error) {
	p, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	g, err := s.grabs(ctx, id)
	if err != nil {
		return nil, err
	}
	v := &model.RedPacketView{Packet: p, Grabs: g}
	for i := range g.Grabs {
		if userID != 0 && g.Grabs[i].UserID == userID {
			v.Mine = &g.Grabs[i]
		}
	}
	return v, nil
}

// AdminPage gathers what the merchant's detail page of a packet shows.
func (s *Service) AdminPage(ctx context.Context, actor model.Claims, id int64) (*model.RedPacketAdminView, error) {
	p, err := s.owned(ctx, actor, id)
	if err != nil {
		return nil, err
	}
	st, err := s.stats(ctx, p)
	if err != nil {
		return nil, err
	}
	g, err := s.grabs(ctx, id)
	if err != nil {
		return nil, err
	}
	return &model.RedPacketAdminView{Packet: p, Stats: st, Grabs: g}, nil
}

// announce tells every web process that what the front page shows changed
// (db/live's catalog generation), unless *err says nothing was made.
func (s *Service) announce(ctx context.Context, err *error) {
	if *err != nil {
		return
	}
	if e := s.Events.CatalogChanged(ctx); e != nil {
		s.Log.Warn("announce a catalog change", "err", e)
	}
}
