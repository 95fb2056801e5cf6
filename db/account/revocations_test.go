package account_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
)

// startRevocations mirrors the record in rdb, as one web process does.
func startRevocations(t *testing.T, rdb redis.UniversalClient, clk *dbtest.Clock, refresh time.Duration) *account.Revocations {
	t.Helper()
	r := account.NewRevocations(rdb, time.Hour)
	r.Now, r.Refresh = clk.Now, refresh
	if err := r.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Loop().Start()
	t.Cleanup(r.Close)
	return r
}

// waitRevoked waits until r refuses (or, with want false, still accepts) c;
// a revocation travels by pub/sub, so the test waits on its arrival.
func waitRevoked(t *testing.T, r *account.Revocations, c model.Claims, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !r.Revoked(c) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never revoked", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A revocation made through one process reaches another one sharing Redis,
// and ends exactly the sessions it names.
func TestRevocationsAcrossProcesses(t *testing.T) {
	rdb := dbtest.Redis(t).Client
	clk := dbtest.NewClock(time.Unix(1_800_000_000, 0))
	a := startRevocations(t, rdb, clk, 0)
	b := startRevocations(t, rdb, clk, 0)
	ctx := context.Background()
	exp := clk.Now().Add(time.Hour).Unix()
	ann1 := model.Claims{UserID: 1, SessionID: "ann-1", IssuedAt: clk.Now().UnixMicro(), Expires: exp}
	ann2 := model.Claims{UserID: 1, SessionID: "ann-2", IssuedAt: clk.Now().UnixMicro(), Expires: exp}
	bob := model.Claims{UserID: 2, SessionID: "bob-1", IssuedAt: clk.Now().UnixMicro(), Expires: exp}

	if err := a.Revoke(ctx, ann1); err != nil {
		t.Fatal(err)
	}
	if !a.Revoked(ann1) {
		t.Fatal("the revoking process still accepts the session")
	}
	waitRevoked(t, b, ann1, "logout on the other process")
	if b.Revoked(ann2) || b.Revoked(bob) {
		t.Fatal("a logout ended other sessions")
	}

	cut := clk.Now().Add(time.Second)
	if err := a.RevokeUser(ctx, 1, cut); err != nil {
		t.Fatal(err)
	}
	waitRevoked(t, b, ann2, "password change on the other process")
	after := model.Claims{UserID: 1, SessionID: "ann-3", IssuedAt: cut.UnixMicro(), Expires: exp}
	if b.Revoked(after) || a.Revoked(after) {
		t.Fatal("a session issued at the cut-off is void")
	}
	if b.Revoked(bob) {
		t.Fatal("a password change ended another user's session")
	}
	// A lower cut-off (a process whose clock is behind) never un-revokes.
	if err := a.RevokeUser(ctx, 1, cut.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	fresh := startRevocations(t, rdb, clk, 0)
	if !fresh.Revoked(ann2) {
		t.Fatal("the cut-off went down")
	}
}

// A process started later loads what was revoked before it, and forgets
// revocations whose tokens have expired; Redis is trimmed too.
func TestRevocationsLoadAtStart(t *testing.T) {
	rdb := dbtest.Redis(t).Client
	clk := dbtest.NewClock(time.Unix(1_800_000_000, 0))
	ctx := context.Background()
	w := account.NewRevocations(rdb, time.Hour)
	w.Now = clk.Now
	live := model.Claims{UserID: 1, SessionID: "live", IssuedAt: clk.Now().UnixMicro(), Expires: clk.Now().Add(time.Hour).Unix()}
	lapsing := model.Claims{UserID: 2, SessionID: "lapsing", IssuedAt: clk.Now().UnixMicro(), Expires: clk.Now().Add(time.Minute).Unix()}
	for _, c := range []model.Claims{live, lapsing} {
		if err := w.Revoke(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.RevokeUser(ctx, 3, clk.Now()); err != nil {
		t.Fatal(err)
	}
	r := startRevocations(t, rdb, clk, 0)
	old := model.Claims{UserID: 3, SessionID: "old", IssuedAt: clk.Now().Add(-time.Second).UnixMicro(), Expires: live.Expires}
	for _, c := range []model.Claims{live, lapsing, old} {
		if !r.Revoked(c) {
			t.Errorf("session %s revoked before start is accepted", c.SessionID)
		}
	}
	clk.Advance(2 * time.Minute)
	if err := r.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rdb.ZCard(ctx, "{revocations}:sessions").Val(); n != 1 {
		t.Errorf("redis keeps %d revoked sessions, want 1 (the lapsed one trimmed)", n)
	}
	if r.Revoked(lapsing) {
		t.Error("a revocation whose token expired is still held in memory")
	}
	if !r.Revoked(live) {
		t.Error("a live revocation was forgotten")
	}
}

// A revocation whose announcement was lost (written without a message) is
// still learnt by the periodic reload.
func TestRevocationsRefreshBackstop(t *testing.T) {
	rdb := dbtest.Redis(t).Client
	clk := dbtest.NewClock(time.Unix(1_800_000_000, 0))
	r := startRevocations(t, rdb, clk, 20*time.Millisecond)
	c := model.Claims{UserID: 1, SessionID: "silent", IssuedAt: clk.Now().UnixMicro(), Expires: clk.Now().Add(time.Hour).Unix()}
	if err := rdb.ZAdd(context.Background(), "{revocations}:sessions", redis.Z{Score: float64(c.Expires), Member: c.SessionID}).Err(); err != nil {
		t.Fatal(err)
	}
	waitRevoked(t, r, c, "a revocation with no message")
}

// A Close after an Open that failed (a process whose opening timed out
// closes what it opened) does nothing, and does not panic.
func TestRevocationsCloseAfterFailedOpen(t *testing.T) {
	rdb := dbtest.Redis(t).Client
	r := account.NewRevocations(rdb, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Open(ctx); err == nil {
		t.Fatal("Open on a cancelled context succeeded")
	}
	r.Close()
}
