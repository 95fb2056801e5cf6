package db

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
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
)

// Red packet statuses.
const (
	RedPacketActive   = "active"
	RedPacketFinished = "finished" // every share claimed and flushed
	RedPacketExpired  = "expired"  // unclaimed shares refunded
)

// RedPacket is a merchant's packet with its live remaining figures.
type RedPacket struct {
	ID             int64     `json:"id"`
	Title          string    `json:"title"`
	TotalCents     int64     `json:"total_cents"`
	Count          int64     `json:"count"`
	Mode           string    `json:"mode"`
	RemainingCount int64     `json:"remaining_count"`
	RemainingCents int64     `json:"remaining_cents"`
	Status         string    `json:"status"`
	ExpiresAt      time.Time `json:"expires_at"`

	OwnerID       int64     `json:"-"`
	ClaimedCount  int64     `json:"-"` // claims flushed to SQLite
	RefundedCents int64     `json:"-"`
	CreatedAt     time.Time `json:"-"`
}

// RedPacketGrab is what a user won.
type RedPacketGrab struct {
	RedPacketID int64     `json:"redpacket_id"`
	AmountCents int64     `json:"amount_cents"`
	GrabbedAt   time.Time `json:"grabbed_at"`
}

// RedPacketClaim is one grab as everyone sees it.
type RedPacketClaim struct {
	UserID      int64     `json:"user_id"`
	Username    string    `json:"username"`
	AmountCents int64     `json:"amount_cents"`
	GrabbedAt   time.Time `json:"grabbed_at"`
	seq         int64
}

// RedPacketGrabs lists a packet's grabs in grab order and names the luckiest (largest, earliest on a tie).
type RedPacketGrabs struct {
	Grabs          []RedPacketClaim `json:"grabs"`
	LuckiestUserID *int64           `json:"luckiest_user_id"`
}

// RedPacketStats sets the live figures from Redis beside the durable ones from SQLite.
type RedPacketStats struct {
	Count          int64 `json:"count"`
	Claimed        int64 `json:"claimed"` // grabs decided in Redis
	Flushed        int64 `json:"flushed"` // of those, written to SQLite
	RemainingCount int64 `json:"remaining_count"`
	RemainingCents int64 `json:"remaining_cents"`
	RefundedCents  int64 `json:"refunded_cents"`
}

// RedPacketEvent is the live event on live.TopicRedPacket after a change.
type RedPacketEvent struct {
	Type           string `json:"type"` // always "redpacket"
	RedPacketID    int64  `json:"redpacket_id"`
	RemainingCount int64  `json:"remaining_count"`
}

// Redis keys of one packet share its hash tag, so every script touches one slot.
func redPacketTag(id int64) string           { return fmt.Sprintf("{redpacket:%d}", id) }
func keyRedPacketMeta(id int64) string       { return redPacketTag(id) + ":meta" }
func keyRedPacketUnclaimed(id int64) string  { return redPacketTag(id) + ":unclaimed" }
func keyRedPacketClaimedBy(id int64) string  { return redPacketTag(id) + ":claimed_by" }
func keyRedPacketClaimed(id int64) string    { return redPacketTag(id) + ":claimed" }
func keyRedPacketProcessing(id int64) string { return redPacketTag(id) + ":processing" }
func keyRedPacketLoading(id int64) string    { return redPacketTag(id) + ":loading" }
func redPacketFlushQueue(id int64) backend.FlushQueue {
	return backend.FlushQueue{Pending: keyRedPacketClaimed(id), Processing: keyRedPacketProcessing(id)}
}
func redPacketKeys(id int64) []string {
	return []string{keyRedPacketMeta(id), keyRedPacketUnclaimed(id), keyRedPacketClaimedBy(id), keyRedPacketClaimed(id), keyRedPacketProcessing(id)}
}

// keyRedPacketsFlushing is the set of packets whose claimed list may hold
// records; filled at load time, never by the grab script, emptied by the flush.
const keyRedPacketsFlushing = "redpackets:flushing"

// redPacketLoadLease is how long a packet being loaded into Redis is left
// alone by the restore sweep; a creation that crashed is completed after it.
const redPacketLoadLease = 2 * time.Minute

// redPacketTime is a fixed-width UTC layout, so stored times sort as text.
const redPacketTime = "2006-01-02T15:04:05.000Z"

func formatRPTime(t time.Time) string { return t.UTC().Format(redPacketTime) }
func parseRPTime(s string) time.Time  { t, _ := time.Parse(redPacketTime, s); return t }

type mathRand struct{}

func (mathRand) Int64N(n int64) int64 { return rand.Int64N(n) }

func (s *Store) redPacketRand() Int64Source {
	if s.RedPacketRand != nil {
		return s.RedPacketRand
	}
	return mathRand{}
}

// share is one unclaimed share as it sits in Redis: "seq:amount".
type share struct{ seq, amount int64 }

func (sh share) String() string {
	return strconv.FormatInt(sh.seq, 10) + ":" + strconv.FormatInt(sh.amount, 10)
}

// CreateRedPacket validates and splits a merchant's packet, writes it and its
// shares to SQLite in one transaction, loads the shares into Redis and
// schedules the expiry. Refused input changes nothing.
func (s *Store) CreateRedPacket(ctx context.Context, ownerID int64, in NewRedPacket) (*RedPacket, error) {
	ttl, err := in.Validate()
	if err != nil {
		return nil, err
	}
	amounts := SplitRedPacket(in.TotalCents, in.Count, in.Mode, s.redPacketRand())
	now := s.Now().UTC().Truncate(time.Millisecond)
	p := &RedPacket{
		Title: in.Title, TotalCents: in.TotalCents, Count: in.Count, Mode: in.Mode,
		RemainingCount: in.Count, RemainingCents: in.TotalCents, Status: RedPacketActive,
		ExpiresAt: now.Add(ttl), OwnerID: ownerID, CreatedAt: now,
	}
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO redpackets (owner_id, title, total_cents, count, mode, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			ownerID, p.Title, p.TotalCents, p.Count, p.Mode, formatRPTime(p.ExpiresAt), formatRPTime(now))
		if err != nil {
			return err
		}
		if p.ID, err = res.LastInsertId(); err != nil {
			return err
		}
		if err := insertRedPacketShares(ctx, tx, p.ID, amounts); err != nil {
			return err
		}
		// Held until Redis has the packet, so the restore sweep never loads it twice.
		return s.Redis.Set(ctx, keyRedPacketLoading(p.ID), "create", redPacketLoadLease).Err()
	})
	if err != nil {
		return nil, fmt.Errorf("create red packet: %w", err)
	}
	shares := make([]share, len(amounts))
	for i, a := range amounts {
		shares[i] = share{int64(i), a}
	}
	if err := s.loadRedPacket(ctx, p, shares, nil); err != nil {
		s.discardRedPacket(context.WithoutCancel(ctx), p.ID)
		return nil, fmt.Errorf("load red packet %d into redis: %w", p.ID, err)
	}
	s.Redis.Del(ctx, keyRedPacketLoading(p.ID))
	s.scheduleRedPacketExpiry(ctx, p)
	return p, nil
}

// insertRedPacketShares writes the shares in multi-row statements (3 values a row, under SQLite's 999 variables).
func insertRedPacketShares(ctx context.Context, tx *sql.Tx, id int64, amounts []int64) error {
	const rows = 300
	for start := 0; start < len(amounts); start += rows {
		end := min(start+rows, len(amounts))
		var q strings.Builder
		q.WriteString(`INSERT INTO redpacket_shares (redpacket_id, seq, amount_cents) VALUES `)
		args := make([]any, 0, 3*(end-start))
		for i := start; i < end; i++ {
			if i > start {
				q.WriteByte(',')
			}
			q.WriteString("(?,?,?)")
			args = append(args, id, i, amounts[i])
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// loadRedPacket puts a packet into Redis: the unclaimed shares in grab order
// (pipelined batches), the claims already known (restores only), the flush
// set, and last the meta hash, which is what makes the packet grabbable.
func (s *Store) loadRedPacket(ctx context.Context, p *RedPacket, unclaimed []share, claimedBy map[int64]string) error {
	const perPush, perTrip = 1000, 20
	if err := s.Redis.Del(ctx, keyRedPacketUnclaimed(p.ID)).Err(); err != nil {
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
			pipe.RPush(ctx, keyRedPacketUnclaimed(p.ID), batch...)
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
		pipe.HSet(ctx, keyRedPacketClaimedBy(p.ID), vals...)
	}
	pipe.SAdd(ctx, keyRedPacketsFlushing, p.ID)
	pipe.HSet(ctx, keyRedPacketMeta(p.ID), "expires_ms", p.ExpiresAt.UnixMilli(), "remaining_cents", left, "count", p.Count)
	_, err := pipe.Exec(ctx)
	return err
}

// discardRedPacket undoes a creation that could not reach Redis.
func (s *Store) discardRedPacket(ctx context.Context, id int64) {
	s.Redis.Del(ctx, append(redPacketKeys(id), keyRedPacketLoading(id))...)
	s.Redis.SRem(ctx, keyRedPacketsFlushing, id)
	if _, err := s.SQL.W.ExecContext(ctx, `DELETE FROM redpackets WHERE id = ?`, id); err != nil {
		s.Log.Error("discard red packet", "redpacket", id, "err", err)
	}
}

const redPacketColumns = `id, owner_id, title, total_cents, count, mode, status, claimed_count, refunded_cents, expires_at, created_at`

func scanRedPacket(row interface{ Scan(...any) error }) (*RedPacket, error) {
	var p RedPacket
	var expires, created string
	if err := row.Scan(&p.ID, &p.OwnerID, &p.Title, &p.TotalCents, &p.Count, &p.Mode, &p.Status, &p.ClaimedCount, &p.RefundedCents, &expires, &created); err != nil {
		return nil, err
	}
	p.ExpiresAt, p.CreatedAt = parseRPTime(expires), parseRPTime(created)
	return &p, nil
}

// redPacketRow reads a packet's durable record, without live figures.
func (s *Store) redPacketRow(ctx context.Context, id int64) (*RedPacket, error) {
	p, err := scanRedPacket(s.SQL.R.QueryRowContext(ctx, `SELECT `+redPacketColumns+` FROM redpackets WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(ENOTFOUND, "red packet not found")
	} else if err != nil {
		return nil, fmt.Errorf("read red packet %d: %w", id, err)
	}
	return p, nil
}

func (s *Store) redPacketList(ctx context.Context, where string, args ...any) ([]*RedPacket, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+redPacketColumns+` FROM redpackets WHERE `+where+` ORDER BY id DESC LIMIT 200`, args...)
	if err != nil {
		return nil, fmt.Errorf("list red packets: %w", err)
	}
	defer rows.Close()
	list := []*RedPacket{}
	for rows.Next() {
		p, err := scanRedPacket(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return list, s.liveRedPackets(ctx, list)
}

// liveRedPackets fills in the remaining figures and the status as of now:
// from Redis while a packet is active, zero once it is finished or refunded.
func (s *Store) liveRedPackets(ctx context.Context, list []*RedPacket) error {
	pipe := s.Redis.Pipeline()
	metas := map[int64]*redis.SliceCmd{}
	lens := map[int64]*redis.IntCmd{}
	for _, p := range list {
		if p.Status == RedPacketActive {
			metas[p.ID] = pipe.HMGet(ctx, keyRedPacketMeta(p.ID), "expires_ms", "remaining_cents", "expired")
			lens[p.ID] = pipe.LLen(ctx, keyRedPacketUnclaimed(p.ID))
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
		if p.Status != RedPacketActive {
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
			p.Status = RedPacketExpired
		}
	}
	return nil
}

// RedPacket returns a packet with its live remaining figures.
func (s *Store) RedPacket(ctx context.Context, id int64) (*RedPacket, error) {
	p, err := s.redPacketRow(ctx, id)
	if err != nil {
		return nil, err
	}
	return p, s.liveRedPackets(ctx, []*RedPacket{p})
}

// ActiveRedPackets lists the packets shoppers may still open, newest first.
func (s *Store) ActiveRedPackets(ctx context.Context) ([]*RedPacket, error) {
	list, err := s.redPacketList(ctx, `status = ? AND expires_at > ?`, RedPacketActive, formatRPTime(s.Now()))
	if err != nil {
		return nil, err
	}
	active := list[:0]
	for _, p := range list {
		if p.Status == RedPacketActive {
			active = append(active, p)
		}
	}
	return active, nil
}

// OwnRedPackets lists the packets a merchant made (every packet for an admin), newest first.
func (s *Store) OwnRedPackets(ctx context.Context, userID int64, role string) ([]*RedPacket, error) {
	if role == model.RoleAdmin {
		return s.redPacketList(ctx, `1 = 1`)
	}
	return s.redPacketList(ctx, `owner_id = ?`, userID)
}

// ownRedPacket returns the packet when the caller may manage it; another
// merchant's packet is not found, as if it did not exist.
func (s *Store) ownRedPacket(ctx context.Context, id, userID int64, role string) (*RedPacket, error) {
	p, err := s.redPacketRow(ctx, id)
	if err != nil {
		return nil, err
	}
	if role != model.RoleAdmin && p.OwnerID != userID {
		return nil, Errorf(ENOTFOUND, "red packet not found")
	}
	return p, nil
}

// RedPacketStats returns a packet's live and durable claim figures for its merchant.
func (s *Store) RedPacketStats(ctx context.Context, id, userID int64, role string) (*RedPacketStats, error) {
	p, err := s.ownRedPacket(ctx, id, userID, role)
	if err != nil {
		return nil, err
	}
	return s.redPacketStats(ctx, p)
}

func (s *Store) redPacketStats(ctx context.Context, p *RedPacket) (*RedPacketStats, error) {
	claimed, err := s.Redis.HLen(ctx, keyRedPacketClaimedBy(p.ID)).Result()
	if err != nil {
		return nil, fmt.Errorf("count claims of red packet %d: %w", p.ID, err)
	}
	if err := s.liveRedPackets(ctx, []*RedPacket{p}); err != nil {
		return nil, err
	}
	// Claims outlive Redis only in SQLite (after a restore from an empty Redis).
	claimed = max(claimed, p.ClaimedCount)
	return &RedPacketStats{
		Count: p.Count, Claimed: claimed, Flushed: p.ClaimedCount,
		RemainingCount: p.RemainingCount, RemainingCents: p.RemainingCents, RefundedCents: p.RefundedCents,
	}, nil
}

// RedPacketGrabs lists who got how much, grabs not yet flushed included.
func (s *Store) RedPacketGrabs(ctx context.Context, id int64) (*RedPacketGrabs, error) {
	if _, err := s.redPacketRow(ctx, id); err != nil {
		return nil, err
	}
	return s.redPacketGrabs(ctx, id)
}

func (s *Store) redPacketGrabs(ctx context.Context, id int64) (*RedPacketGrabs, error) {
	// Read Redis first, atomically: the flush deletes a record from Redis only
	// after committing it to SQLite, so every claim is in one place or the other.
	var processing, pending *redis.StringSliceCmd
	_, err := s.Redis.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		processing = pipe.LRange(ctx, keyRedPacketProcessing(id), 0, -1)
		pending = pipe.LRange(ctx, keyRedPacketClaimed(id), 0, -1)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read pending claims of red packet %d: %w", id, err)
	}
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT s.seq, s.user_id, u.username, s.amount_cents, s.grabbed_at
		FROM redpacket_shares s JOIN users u ON u.id = s.user_id WHERE s.redpacket_id = ? AND s.user_id IS NOT NULL`, id)
	if err != nil {
		return nil, fmt.Errorf("read claims of red packet %d: %w", id, err)
	}
	defer rows.Close()
	seen := map[int64]bool{}
	grabs := []RedPacketClaim{}
	for rows.Next() {
		var c RedPacketClaim
		var at string
		if err := rows.Scan(&c.seq, &c.UserID, &c.Username, &c.AmountCents, &at); err != nil {
			return nil, err
		}
		c.GrabbedAt = parseRPTime(at)
		seen[c.UserID] = true
		grabs = append(grabs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var missing []int64
	for _, rec := range append(processing.Val(), pending.Val()...) {
		c, err := parseRedPacketClaim(rec)
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
	sort.Slice(grabs, func(i, j int) bool { return grabs[i].seq < grabs[j].seq })
	out := &RedPacketGrabs{Grabs: grabs}
	if l := luckiestClaim(grabs); l >= 0 {
		out.LuckiestUserID = &grabs[l].UserID
	}
	return out, nil
}

// luckiestClaim is the index of the largest grab, the earliest among equals, or -1 when there are none.
func luckiestClaim(grabs []RedPacketClaim) int {
	best := -1
	for i, g := range grabs {
		if best < 0 || g.AmountCents > grabs[best].AmountCents {
			best = i
		}
	}
	return best
}

// usernames looks up the names of the given users.
func (s *Store) usernames(ctx context.Context, ids []int64) (map[int64]string, error) {
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

// claimRecord is a claim on the claimed list: "user:seq:amount:grabbed_ms".
func parseRedPacketClaim(rec string) (*RedPacketClaim, error) {
	parts := strings.Split(rec, ":")
	if len(parts) != 4 {
		return nil, fmt.Errorf("malformed red packet claim %q", rec)
	}
	var n [4]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("malformed red packet claim %q", rec)
		}
		n[i] = v
	}
	return &RedPacketClaim{UserID: n[0], seq: n[1], AmountCents: n[2], GrabbedAt: time.UnixMilli(n[3]).UTC()}, nil
}

// RedPacketView is a packet as its shopper page shows it: the packet, its grabs and the caller's own grab.
type RedPacketView struct {
	Packet *RedPacket
	Grabs  *RedPacketGrabs
	Mine   *RedPacketClaim // nil when the caller has not grabbed (or is anonymous)
}

// RedPacketPage gathers what the shopper page of a packet shows; userID 0 is an anonymous visitor.
func (s *Store) RedPacketPage(ctx context.Context, id, userID int64) (*RedPacketView, error) {
	p, err := s.RedPacket(ctx, id)
	if err != nil {
		return nil, err
	}
	g, err := s.redPacketGrabs(ctx, id)
	if err != nil {
		return nil, err
	}
	v := &RedPacketView{Packet: p, Grabs: g}
	for i := range g.Grabs {
		if userID != 0 && g.Grabs[i].UserID == userID {
			v.Mine = &g.Grabs[i]
		}
	}
	return v, nil
}

// RedPacketAdminView is a packet as its merchant's detail page shows it.
type RedPacketAdminView struct {
	Packet *RedPacket
	Stats  *RedPacketStats
	Grabs  *RedPacketGrabs
}

// RedPacketAdminPage gathers what the merchant's detail page of a packet shows.
func (s *Store) RedPacketAdminPage(ctx context.Context, id, userID int64, role string) (*RedPacketAdminView, error) {
	p, err := s.ownRedPacket(ctx, id, userID, role)
	if err != nil {
		return nil, err
	}
	st, err := s.redPacketStats(ctx, p)
	if err != nil {
		return nil, err
	}
	g, err := s.redPacketGrabs(ctx, id)
	if err != nil {
		return nil, err
	}
	return &RedPacketAdminView{Packet: p, Stats: st, Grabs: g}, nil
}
