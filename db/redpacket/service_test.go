package redpacket_test

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/db/redpacket"
)

// rpService is a service over this test's own Redis and SQLite with a clock the test moves.
type rpService struct {
	*redpacket.Service
	t     testing.TB
	redis *rdb.Redis
	mu    sync.Mutex
	now   time.Time
}

func newRPService(t testing.TB) *rpService {
	t.Helper()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	s := &rpService{Service: &redpacket.Service{Backend: backend.New(sq, r.Client)}, t: t, redis: r, now: time.Now().UTC()}
	s.Backend.Now = func() time.Time { s.mu.Lock(); defer s.mu.Unlock(); return s.now }
	return s
}

// flush runs the red packet flush under the flush lock, as the worker does.
func (s *rpService) flush(ctx context.Context) error { return s.FlushAll(ctx, s.FlushClaims) }

func (s *rpService) advance(d time.Duration) { s.mu.Lock(); s.now = s.now.Add(d); s.mu.Unlock() }

// users adds n accounts straight to SQLite (no password hashing) and returns their IDs.
func (s *rpService) users(n int) []int64 {
	s.t.Helper()
	ids := make([]int64, n)
	err := s.SQL.Tx(context.Background(), func(tx *sql.Tx) error {
		for i := range ids {
			if err := tx.QueryRow(`INSERT INTO users (username, password_hash, role, created_ms) VALUES (?, 'x', 'user', 0) RETURNING id`, fmt.Sprintf("rp_%d_%d", time.Now().UnixNano(), i)).Scan(&ids[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return ids
}

func (s *rpService) create(in model.NewRedPacket) *model.RedPacket {
	s.t.Helper()
	owner := s.users(1)[0]
	p, err := s.Create(context.Background(), owner, in)
	if err != nil {
		s.t.Fatalf("create %+v: %v", in, err)
	}
	return p
}

// durableClaims reads the flushed claims: user → amount.
func (s *rpService) durableClaims(id int64) map[int64]int64 {
	s.t.Helper()
	rows, err := s.SQL.R.Query(`SELECT user_id, amount_cents FROM redpacket_shares WHERE redpacket_id = ? AND user_id IS NOT NULL`, id)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	got := map[int64]int64{}
	for rows.Next() {
		var uid, amount int64
		rows.Scan(&uid, &amount)
		if _, dup := got[uid]; dup {
			s.t.Fatalf("user %d holds two shares of packet %d", uid, id)
		}
		got[uid] = amount
	}
	return got
}

// 2,000 distinct users released at once on a packet of 500 shares: exactly
// 500 win, nobody twice, the amounts sum to the total, every loser is told
// sold_out, and after the flush SQLite holds the same 500 claims.
func TestGrabRace(t *testing.T) {
	ctx := context.Background()
	s := newRPService(t)
	const shares, users, total = 500, 2000, 123_456
	p := s.create(model.NewRedPacket{Title: "race", TotalCents: total, Count: shares, Mode: model.RedPacketRandom})
	ids := s.users(users)

	start := make(chan struct{})
	grabs := make([]*model.RedPacketGrab, users)
	errs := make([]error, users)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			grabs[i], errs[i] = s.Grab(ctx, ids[i], p.ID)
		}(i)
	}
	close(start)
	wg.Wait()

	won := map[int64]int64{}
	var sum int64
	for i, g := range grabs {
		switch {
		case errs[i] == nil:
			if g.AmountCents < 1 {
				t.Fatalf("user %d won %d cents", ids[i], g.AmountCents)
			}
			won[ids[i]] = g.AmountCents
			sum += g.AmountCents
		case db.ErrorCode(errs[i]) != db.ESOLDOUT:
			t.Fatalf("user %d: %v, want a share or sold_out", ids[i], errs[i])
		}
	}
	if len(won) != shares || sum != total {
		t.Fatalf("%d winners sharing %d cents, want %d sharing %d", len(won), sum, shares, total)
	}
	for uid := range won {
		if _, err := s.Grab(ctx, uid, p.ID); db.ErrorCode(err) != db.EALREADY {
			t.Fatalf("second grab by winner %d: %v, want already_grabbed", uid, err)
		}
		break
	}

	if err := s.flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := s.durableClaims(p.ID)
	if len(got) != shares {
		t.Fatalf("SQLite holds %d claims, want %d", len(got), shares)
	}
	for uid, amount := range won {
		if got[uid] != amount {
			t.Fatalf("user %d: SQLite says %d cents, the grab said %d", uid, got[uid], amount)
		}
	}
	after, err := s.Get(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != model.RedPacketFinished || after.RemainingCount != 0 || after.RemainingCents != 0 {
		t.Fatalf("after every share is claimed and flushed: %+v, want finished with nothing left", after)
	}
	if n := s.redis.Client.SCard(ctx, "redpackets:flushing").Val(); n != 0 {
		t.Fatalf("finished packet still in the flush set (%d members)", n)
	}
}

// A packet is finished only once every claim is flushed, not when the last share is grabbed.
func TestFinishedAfterFlush(t *testing.T) {
	ctx := context.Background()
	s := newRPService(t)
	p := s.create(model.NewRedPacket{Title: "two", TotalCents: 200, Count: 2, Mode: model.RedPacketFixed})
	for _, uid := range s.users(2) {
		if g, err := s.Grab(ctx, uid, p.ID); err != nil || g.AmountCents != 100 {
			t.Fatalf("grab: %+v %v, want 100 cents", g, err)
		}
	}
	got, _ := s.Get(ctx, p.ID)
	if got.Status != model.RedPacketActive || got.RemainingCount != 0 {
		t.Fatalf("before the flush: %+v, want active with 0 left", got)
	}
	st, _ := s.Stats(ctx, model.Claims{UserID: 0, Role: model.RoleAdmin}, p.ID)
	if st.Claimed != 2 || st.Flushed != 0 {
		t.Fatalf("stats before the flush %+v, want 2 claimed and 0 flushed", st)
	}
	s.flush(ctx)
	got, _ = s.Get(ctx, p.ID)
	st, _ = s.Stats(ctx, model.Claims{UserID: 0, Role: model.RoleAdmin}, p.ID)
	if got.Status != model.RedPacketFinished || st.Flushed != 2 {
		t.Fatalf("after the flush: %+v %+v, want finished with 2 flushed", got, st)
	}
}

// Expiry refunds exactly the unclaimed shares, once, however often it runs,
// and claims made before it still reach SQLite.
func TestExpiryRefunds(t *testing.T) {
	ctx := context.Background()
	s := newRPService(t)
	const total = 10_000
	p := s.create(model.NewRedPacket{Title: "expiring", TotalCents: total, Count: 10, Mode: model.RedPacketRandom, ExpiresIn: new("1m")})
	ids := s.users(5)
	var claimed int64
	for _, uid := range ids[:4] {
		g, err := s.Grab(ctx, uid, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		claimed += g.AmountCents
	}
	if err := s.Expire(ctx, p.ID); err == nil {
		t.Fatal("expiry before expires_at succeeded; want an error so the task retries")
	}
	if got, _ := s.Get(ctx, p.ID); got.Status != model.RedPacketActive || got.RemainingCount != 6 {
		t.Fatalf("early expiry changed the packet: %+v", got)
	}

	s.advance(time.Minute)
	if _, err := s.Grab(ctx, ids[4], p.ID); db.ErrorCode(err) != db.EEXPIRED {
		t.Fatalf("grab at expires_at: %v, want expired", err)
	}
	if got, _ := s.Get(ctx, p.ID); got.Status != model.RedPacketExpired {
		t.Fatalf("past expires_at before the task ran: status %q, want expired", got.Status)
	}
	for i := 0; i < 3; i++ { // at-least-once delivery: running again changes nothing
		if err := s.Expire(ctx, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	s.flush(ctx)
	st, err := s.Stats(ctx, model.Claims{UserID: 0, Role: model.RoleAdmin}, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.RefundedCents+claimed != total || st.Claimed != 4 || st.Flushed != 4 || st.RemainingCount != 0 || st.RemainingCents != 0 {
		t.Fatalf("stats %+v with %d cents claimed, want refunded + claimed == %d, 4 claimed and flushed, none left", st, claimed, total)
	}
	var refundedRows int
	s.SQL.R.QueryRow(`SELECT COUNT(*) FROM redpacket_shares WHERE redpacket_id = ? AND refunded = 1`, p.ID).Scan(&refundedRows)
	if refundedRows != 6 {
		t.Fatalf("%d shares marked refunded, want 6", refundedRows)
	}
	if got, _ := s.Get(ctx, p.ID); got.Status != model.RedPacketExpired {
		t.Fatalf("status %q after expiry and flush, want expired", got.Status)
	}
	if _, err := s.Grab(ctx, ids[4], p.ID); db.ErrorCode(err) != db.EEXPIRED {
		t.Fatalf("grab after the refund: %v, want expired", err)
	}
}

// Grabs racing the expiry: every share ends up either claimed or refunded, never both, never neither.
func TestExpiryRacesGrabs(t *testing.T) {
	ctx := context.Background()
	s := newRPService(t)
	const total = 50_000
	p := s.create(model.NewRedPacket{Title: "race expiry", TotalCents: total, Count: 300, Mode: model.RedPacketRandom, ExpiresIn: new("1s")})
	ids := s.users(400)
	var claimed atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, uid := range ids {
		wg.Add(1)
		go func(uid int64) {
			defer wg.Done()
			<-start
			if g, err := s.Grab(ctx, uid, p.ID); err == nil {
				claimed.Add(g.AmountCents)
			} else if c := db.ErrorCode(err); c != db.EEXPIRED && c != db.ESOLDOUT {
				t.Errorf("grab: %v", err)
			}
		}(uid)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		s.advance(time.Second)
		if err := s.Expire(ctx, p.ID); err != nil {
			t.Errorf("expire: %v", err)
		}
	}()
	close(start)
	wg.Wait()
	s.flush(ctx)
	st, _ := s.Stats(ctx, model.Claims{UserID: 0, Role: model.RoleAdmin}, p.ID)
	if st.RefundedCents+claimed.Load() != total || st.Flushed != st.Claimed {
		t.Fatalf("stats %+v, %d claimed: want refunded + claimed == %d and every claim flushed", st, claimed.Load(), total)
	}
}

// An expiry that finds the packet missing from Redis refunds what SQLite
// holds unclaimed; one that finds it being loaded changes nothing and fails,
// so the task retries.
func TestExpiryWithoutRedis(t *testing.T) {
	ctx := context.Background()
	s := newRPService(t)
	p := s.create(model.NewRedPacket{Title: "lost", TotalCents: 500, Count: 5, Mode: model.RedPacketFixed, ExpiresIn: new("1m")})
	for _, uid := range s.users(2) {
		if _, err := s.Grab(ctx, uid, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flush(ctx); err != nil {
		t.Fatal(err)
	}
	s.advance(time.Minute)
	rdb.FlushDB(ctx, s.redis.Client)
	s.redis.Client.Set(ctx, redpacket.LoadingKey(p.ID), "restore", time.Minute)
	if err := s.Expire(ctx, p.ID); err == nil {
		t.Fatal("expiry while the packet is being loaded succeeded; want an error so the task retries")
	}
	if got, _ := s.Get(ctx, p.ID); got.Status != model.RedPacketExpired || got.RefundedCents != 0 {
		t.Fatalf("refused expiry changed SQLite: %+v", got)
	}
	s.redis.Client.Del(ctx, redpacket.LoadingKey(p.ID))
	if err := s.Expire(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(ctx, model.Claims{Role: model.RoleAdmin}, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := (model.RedPacketStats{Count: 5, Claimed: 2, Flushed: 2, RefundedCents: 300}); *st != want {
		t.Fatalf("stats %+v, want %+v", *st, want)
	}
}

// A Redis that lost the packet (an embedded one restarted) gets it back from
// SQLite: flushed claims still count, their users cannot grab again, and the
// unclaimed shares are on offer.
func TestRestoreFromSQLite(t *testing.T) {
	ctx := context.Background()
	s := newRPService(t)
	p := s.create(model.NewRedPacket{Title: "restore", TotalCents: 1000, Count: 5, Mode: model.RedPacketFixed})
	ids := s.users(3)
	for _, uid := range ids[:2] {
		if _, err := s.Grab(ctx, uid, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	s.flush(ctx)
	rdb.FlushDB(ctx, s.redis.Client)
	if _, err := s.Grab(ctx, ids[2], p.ID); db.ErrorCode(err) != db.ENOTFOUND {
		t.Fatalf("grab with Redis empty: %v, want not_found", err)
	}
	if err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Grab(ctx, ids[0], p.ID); db.ErrorCode(err) != db.EALREADY {
		t.Fatalf("restored claimant grabs again: %v, want already_grabbed", err)
	}
	if g, err := s.Grab(ctx, ids[2], p.ID); err != nil || g.AmountCents != 200 {
		t.Fatalf("new grab after restore: %+v %v", g, err)
	}
	got, _ := s.Get(ctx, p.ID)
	if got.RemainingCount != 2 || got.RemainingCents != 400 {
		t.Fatalf("after restore and a grab: %+v, want 2 shares and 400 cents left", got)
	}
	s.flush(ctx)
	if n := len(s.durableClaims(p.ID)); n != 3 {
		t.Fatalf("%d durable claims, want 3", n)
	}
}

// Grabs list who got how much in grab order, flushed or not, and name the largest as luckiest.
func TestGrabsList(t *testing.T) {
	ctx := context.Background()
	s := newRPService(t)
	s.Rand = sequence{4, 0, 0} // shares 5, 1, 1, 93 of 100
	p := s.create(model.NewRedPacket{Title: "list", TotalCents: 100, Count: 4, Mode: model.RedPacketRandom})
	ids := s.users(4)
	g, _ := s.Grabs(ctx, p.ID)
	if len(g.Grabs) != 0 || g.LuckiestUserID != nil {
		t.Fatalf("no grabs yet: %+v", g)
	}
	for i, uid := range ids {
		if _, err := s.Grab(ctx, uid, p.ID); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			s.flush(ctx) // half flushed, half still in Redis
		}
	}
	g, err := s.Grabs(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{5, 1, 1, 93}
	if len(g.Grabs) != 4 {
		t.Fatalf("%d grabs, want 4", len(g.Grabs))
	}
	for i, c := range g.Grabs {
		if c.UserID != ids[i] || c.AmountCents != want[i] || c.Username == "" || c.GrabbedAt.IsZero() {
			t.Fatalf("grab %d = %+v, want user %d with %d cents and a name", i, c, ids[i], want[i])
		}
	}
	if g.LuckiestUserID == nil || *g.LuckiestUserID != ids[3] {
		t.Fatalf("luckiest %v, want %d", g.LuckiestUserID, ids[3])
	}
}

// An equal-shares packet names no luckiest: every share is the same.
func TestGrabsListEqualShares(t *testing.T) {
	ctx := context.Background()
	s := newRPService(t)
	p := s.create(model.NewRedPacket{Title: "equal", TotalCents: 300, Count: 3, Mode: model.RedPacketFixed})
	for _, uid := range s.users(2) {
		if _, err := s.Grab(ctx, uid, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	if g, err := s.Grabs(ctx, p.ID); err != nil || len(g.Grabs) != 2 || g.LuckiestUserID != nil {
		t.Fatalf("equal shares: %+v %v, want two grabs and no luckiest", g, err)
	}
}

type sequence []int64

func (s sequence) Int64N(n int64) int64 {
	d := s[0]
	copy(s, s[1:])
	return d % n
}

// A merchant sees only its own packets; an admin sees all.
func TestOwnership(t *testing.T) {
	ctx := context.Background()
	s := newRPService(t)
	p := s.create(model.NewRedPacket{Title: "mine", TotalCents: 100, Count: 1, Mode: model.RedPacketFixed})
	other := s.users(1)[0]
	if _, err := s.Stats(ctx, model.Claims{UserID: other, Role: model.RoleMerchant}, p.ID); db.ErrorCode(err) != db.ENOTFOUND {
		t.Fatalf("another merchant's stats: %v, want not_found", err)
	}
	if list, _ := s.Own(ctx, model.Claims{UserID: other, Role: model.RoleMerchant}); len(list) != 0 {
		t.Fatalf("another merchant lists %d packets, want 0", len(list))
	}
	if list, _ := s.Own(ctx, model.Claims{UserID: other, Role: model.RoleAdmin}); len(list) != 1 {
		t.Fatalf("admin lists %d packets, want 1", len(list))
	}
}

// The largest packet: 100,000 shares in one transaction and pipelined pushes.
func TestLargestPacket(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	ctx := context.Background()
	s := newRPService(t)
	p := s.create(model.NewRedPacket{Title: "big", TotalCents: 1_000_000, Count: model.RedPacketCount.Max, Mode: model.RedPacketFixed})
	var rows, sum int64
	s.SQL.R.QueryRow(`SELECT COUNT(*), SUM(amount_cents) FROM redpacket_shares WHERE redpacket_id = ?`, p.ID).Scan(&rows, &sum)
	got, _ := s.Get(ctx, p.ID)
	if rows != model.RedPacketCount.Max || sum != 1_000_000 || got.RemainingCount != model.RedPacketCount.Max || got.RemainingCents != 1_000_000 {
		t.Fatalf("SQLite %d shares / %d cents, Redis %+v; want %d shares of 10 cents everywhere", rows, sum, got, model.RedPacketCount.Max)
	}
}

// Refused input creates nothing, in SQLite or Redis.
func TestCreateRefusedChangesNothing(t *testing.T) {
	ctx := context.Background()
	s := newRPService(t)
	owner := s.users(1)[0]
	for _, in := range []model.NewRedPacket{
		{Title: "x", TotalCents: 100, Count: 0, Mode: model.RedPacketRandom},
		{Title: "x", TotalCents: 5, Count: 10, Mode: model.RedPacketRandom},
		{Title: "x", TotalCents: 101, Count: 10, Mode: model.RedPacketFixed},
		{Title: "x", TotalCents: 100, Count: 10, Mode: "lucky"},
		{Title: "x", TotalCents: 100, Count: 10, Mode: model.RedPacketRandom, ExpiresIn: new("soon")},
	} {
		if _, err := s.Create(ctx, owner, in); db.ErrorCode(err) != db.EINVALID {
			t.Fatalf("create %+v: %v, want invalid", in, err)
		}
	}
	var n int
	s.SQL.R.QueryRow(`SELECT (SELECT COUNT(*) FROM redpackets) + (SELECT COUNT(*) FROM redpacket_shares)`).Scan(&n)
	if keys, _ := rdb.Keys(ctx, s.redis.Client, "*"); n != 0 || len(keys) != 0 {
		t.Fatalf("refused creations left %d rows and keys %v", n, keys)
	}
}
