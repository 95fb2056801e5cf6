package audit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/audit"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
)

// auditStore is the log over a fresh SQLite only (the audit log needs no
// Redis) with a clock the test moves.
func auditStore(t *testing.T) (*audit.Service, *dbtest.Clock) {
	t.Helper()
	clk := dbtest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 6_000_600, time.UTC))
	return audit.New(&backend.Backend{SQL: dbtest.DB(t), Now: clk.Now}), clk
}

// The audit log refuses UPDATE and DELETE, even as raw SQL on the writer.
func TestAuditAppendOnly(t *testing.T) {
	s, _ := auditStore(t)
	ctx := context.Background()
	if err := s.Append(ctx, audit.Entry{ActorID: 1, Actor: "admin", Action: "goods.create", Target: "goods:1"}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE audit_log SET actor = 'someone else'`,
		`DELETE FROM audit_log`,
	} {
		_, err := s.SQL.W.ExecContext(ctx, q)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: got %v, want the append-only refusal", q, err)
		}
	}
	got, err := s.Entries(ctx, model.Claims{UserID: 1, Role: model.RoleAdmin}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Actor != "admin" || got[0].Target != "goods:1" {
		t.Fatalf("entries after refused changes: %+v, want the one entry unchanged", got)
	}
}

// Entries page newest first by id; a merchant sees only its own; bad paging is invalid.
func TestAuditEntriesPaging(t *testing.T) {
	s, clk := auditStore(t)
	ctx := context.Background()
	start := clk.Now()
	for i := 1; i <= 7; i++ {
		actor := int64(1) // the admin
		if i%2 == 0 {
			actor = 2 // the merchant
		}
		if err := s.Append(ctx, audit.Entry{ActorID: actor, Actor: fmt.Sprint("user", actor), Action: "goods.update", Target: fmt.Sprintf("goods:%d", i)}); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	admin := model.Claims{UserID: 1, Role: model.RoleAdmin}
	merchant := model.Claims{UserID: 2, Role: model.RoleMerchant}
	targets := func(es []audit.Entry) string {
		var b []string
		for _, e := range es {
			b = append(b, e.Target)
		}
		return strings.Join(b, " ")
	}
	tests := []struct {
		name   string
		caller model.Claims
		before int64
		limit  int
		want   string
	}{
		{"admin newest page", admin, 0, 3, "goods:7 goods:6 goods:5"},
		{"admin older page", admin, 5, 3, "goods:4 goods:3 goods:2"},
		{"admin last page", admin, 2, 3, "goods:1"},
		{"admin default limit", admin, 0, 0, "goods:7 goods:6 goods:5 goods:4 goods:3 goods:2 goods:1"},
		{"merchant own only", merchant, 0, 0, "goods:6 goods:4 goods:2"},
		{"merchant older page", merchant, 4, 10, "goods:2"},
	}
	for _, tt := range tests {
		got, err := s.Entries(ctx, tt.caller, tt.before, tt.limit)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if g := targets(got); g != tt.want {
			t.Errorf("%s: (-want +got)\n- %s\n+ %s", tt.name, tt.want, g)
		}
	}
	first, _ := s.Entries(ctx, admin, 2, 1)
	// The log keeps the millisecond.
	if want := start.Truncate(time.Millisecond); len(first) != 1 || !first[0].At.Equal(want) || first[0].ID != 1 || first[0].ActorID != 1 {
		t.Errorf("first entry %+v, want id 1 at %s by actor 1", first, want)
	}

	for _, bad := range []struct {
		before int64
		limit  int
	}{{0, -1}, {0, audit.MaxLimit + 1}, {-1, 10}} {
		if _, err := s.Entries(ctx, admin, bad.before, bad.limit); db.ErrorCode(err) != db.EINVALID {
			t.Errorf("before=%d limit=%d: got %v, want invalid", bad.before, bad.limit, err)
		}
	}
	if _, err := s.Entries(ctx, model.Claims{UserID: 3, Role: model.RoleUser}, 0, 0); db.ErrorCode(err) != db.EFORBIDDEN {
		t.Errorf("shopper: got %v, want forbidden", err)
	}
}

// A detail is cut to DetailMax bytes without splitting a character; a failed sign-in has no actor id.
func TestAuditTruncatesAndSignIns(t *testing.T) {
	s, _ := auditStore(t)
	ctx := context.Background()
	if err := s.Append(ctx, audit.Entry{Action: "x.y", Detail: "a" + strings.Repeat("é", audit.DetailMax)}); err != nil {
		t.Fatal(err)
	}
	if err := s.SignIn(ctx, audit.ActionLogin, "nobody", nil, "10.0.0.1", db.Errorf(db.EUNAUTHORIZED, "wrong username or password")); err != nil {
		t.Fatal(err)
	}
	if err := s.SignIn(ctx, audit.ActionLogin, "alice", &model.User{ID: 9, Username: "alice"}, "10.0.0.2", nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.Entries(ctx, model.Claims{Role: model.RoleAdmin}, 0, 0)
	if err != nil || len(got) != 3 {
		t.Fatalf("entries: %v %+v", err, got)
	}
	if d := got[2].Detail; len(d) > audit.DetailMax || len(d) < audit.DetailMax-1 || !strings.HasSuffix(d, "é") {
		t.Errorf("detail of %d bytes (suffix %q), want at most %d ending in a whole character", len(d), d[len(d)-2:], audit.DetailMax)
	}
	if e := got[1]; e.Action != "auth.login_failed" || e.Actor != "nobody" || e.ActorID != 0 || e.IP != "10.0.0.1" {
		t.Errorf("failed login entry %+v", e)
	}
	if e := got[0]; e.Action != "auth.login" || e.Actor != "alice" || e.ActorID != 9 || e.Target != "user:9" || e.IP != "10.0.0.2" {
		t.Errorf("login entry %+v", e)
	}
}
