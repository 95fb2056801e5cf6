package audit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db/audit"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
)

// Entries written while the log's time was RFC 3339 text read back, after
// 0008_account_times, at the same time to the millisecond, with their IDs;
// the rebuilt log is still append-only, still indexed by actor, and numbers
// new entries after the old ones.
func TestMigrationAuditTimes(t *testing.T) {
	path, old := dbtest.SQLiteBefore(t, "0008")
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Every shape Go's RFC3339Nano takes in UTC (what Append wrote), and an offset.
	rows := []struct {
		text string
		want time.Time
	}{
		{"2030-01-02T03:04:05.123456789Z", at("2030-01-02T03:04:05.123Z")},
		{"2030-01-02T03:04:05.000000600Z", at("2030-01-02T03:04:05Z")},
		{"2030-01-02T03:04:05.04Z", at("2030-01-02T03:04:05.04Z")},
		{"2030-01-02T03:04:06Z", at("2030-01-02T03:04:06Z")},
		{"2030-01-02T11:04:07.5+08:00", at("2030-01-02T03:04:07.5Z")},
	}
	for i, r := range rows {
		actor := any(nil) // a failed sign-in has no actor
		if i%2 == 0 {
			actor = 7
		}
		if _, err := old.Exec(`INSERT INTO audit_log (at, actor_id, actor, action, target, detail, ip) VALUES (?, ?, 'ann', 'goods.update', ?, '{}', '10.0.0.1')`,
			r.text, actor, "goods:"+string(rune('1'+i))); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	sq, err := sqldb.OpenSQLite(path)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Cleanup(func() { sq.Close() })
	b := backend.New(sq, nil)
	s := audit.New(b)
	ctx := context.Background()
	admin := model.Claims{UserID: 1, Role: model.RoleAdmin}
	got, err := s.Entries(ctx, admin, 0, 0)
	if err != nil || len(got) != len(rows) {
		t.Fatalf("entries after the migration: %+v, %v", got, err)
	}
	for i, e := range got {
		r, id := rows[len(rows)-1-i], int64(len(rows)-i) // newest first
		if e.ID != id || !e.At.Equal(r.want) || e.Actor != "ann" || e.IP != "10.0.0.1" || e.Detail != "{}" {
			t.Errorf("entry %d (%s): %+v, want at %s", id, r.text, e, r.want)
		}
	}
	mine, err := s.Entries(ctx, model.Claims{UserID: 7, Role: model.RoleMerchant}, 0, 0)
	if err != nil || len(mine) != 3 {
		t.Errorf("the merchant's own entries: %d, %v; want 3", len(mine), err)
	}

	for _, q := range []string{`UPDATE audit_log SET actor = 'someone else'`, `DELETE FROM audit_log`} {
		if _, err := sq.W.Exec(q); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s after the migration: %v, want the append-only refusal", q, err)
		}
	}
	prows, err := sq.R.Query(`EXPLAIN QUERY PLAN SELECT id FROM audit_log WHERE actor_id = 7 AND id < 9 ORDER BY id DESC`)
	if err != nil {
		t.Fatal(err)
	}
	var plan string
	for prows.Next() {
		var id, parent, unused int
		var detail string
		if err := prows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan += detail + "; "
	}
	prows.Close()
	if !strings.Contains(plan, "audit_log_actor") {
		t.Errorf("query by actor plans %q, want the audit_log_actor index", plan)
	}

	now := time.Date(2031, 5, 6, 7, 8, 9, 123_456_789, time.UTC)
	b.Now = func() time.Time { return now }
	if err := s.Append(ctx, audit.Entry{ActorID: 1, Actor: "admin", Action: "user.create"}); err != nil {
		t.Fatal(err)
	}
	last, err := s.Entries(ctx, admin, 0, 1)
	if err != nil || len(last) != 1 || last[0].ID != int64(len(rows)+1) || !last[0].At.Equal(now.Truncate(time.Millisecond)) {
		t.Fatalf("new entry %+v, %v; want id %d at %s", last, err, len(rows)+1, now.Truncate(time.Millisecond))
	}
}
