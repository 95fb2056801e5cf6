package account_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/account"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
	"golang.org/x/crypto/bcrypt"
)

// Users written while created_at was RFC 3339 text read back, after
// 0008_account_times, with the same creation time to the millisecond; the
// table keeps its rows, its IDs and the foreign keys that point at it.
func TestMigrationAccountTimes(t *testing.T) {
	path, old := dbtest.SQLiteBefore(t, "0008")
	hash, err := bcrypt.GenerateFromPassword([]byte("password123"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Every shape Go's RFC3339Nano takes in UTC (what CreateUser and
	// SeedUsers wrote), plain RFC 3339, and an offset for good measure.
	rows := []struct {
		name, text string
		want       time.Time
	}{
		{"nano", "2030-01-02T03:04:05.123456789Z", at("2030-01-02T03:04:05.123Z")},
		{"micro", "2030-01-02T03:04:05.000123Z", at("2030-01-02T03:04:05Z")},
		{"milli", "2030-01-02T03:04:05.007Z", at("2030-01-02T03:04:05.007Z")},
		{"trimmed", "2030-01-02T03:04:05.5Z", at("2030-01-02T03:04:05.5Z")},
		{"whole", "2030-01-02T03:04:05Z", at("2030-01-02T03:04:05Z")},
		{"before_1970", "1969-12-31T23:59:59.25Z", at("1969-12-31T23:59:59.25Z")},
		{"offset", "2030-01-02T11:04:05.25+08:00", at("2030-01-02T03:04:05.25Z")},
	}
	for _, r := range rows {
		if _, err := old.Exec(`INSERT INTO users (username, password_hash, role, created_at) VALUES (?, ?, 'user', ?)`, "old_"+r.name, string(hash), r.text); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := old.Exec(`INSERT INTO slots (merchant_id, title, start_ms, end_ms, created_ms) VALUES (1, 'kept', 1, 2, 0)`); err != nil {
		t.Fatal(err)
	}
	old.Close()

	sq, err := sqldb.OpenSQLite(path)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Cleanup(func() { sq.Close() })
	b := backend.New(sq, nil)
	s := account.New(b)
	s.BcryptCost = bcrypt.MinCost
	ctx := context.Background()
	for i, r := range rows {
		u, err := s.UserByName(ctx, "old_"+r.name)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if u.ID != int64(i+1) || !u.CreatedAt.Equal(r.want) {
			t.Errorf("%s: user %d created %s, want user %d created %s", r.name, u.ID, u.CreatedAt, i+1, r.want)
		}
		if a, err := s.Authenticate(ctx, "old_"+r.name, "password123"); err != nil || !a.CreatedAt.Equal(r.want) {
			t.Errorf("%s: sign in after the migration: %+v, %v", r.name, a, err)
		}
	}

	var cols []string
	crows, err := sq.R.Query(`SELECT name FROM pragma_table_info('users')`)
	if err != nil {
		t.Fatal(err)
	}
	for crows.Next() {
		var c string
		crows.Scan(&c)
		cols = append(cols, c)
	}
	crows.Close()
	// created_ms takes created_at's place at the end of the rebuilt table;
	// later migrations (locale) add theirs after it.
	if !slices.Contains(cols, "created_ms") || slices.Contains(cols, "created_at") || len(cols) < 7 || cols[6] != "created_ms" {
		t.Errorf("users columns %v, want created_ms in place of created_at, after the first six", cols)
	}
	// The slot still belongs to user 1, and a slot of no user is still refused.
	var n int
	if err := sq.R.QueryRow(`SELECT COUNT(*) FROM slots JOIN users ON users.id = slots.merchant_id`).Scan(&n); err != nil || n != 1 {
		t.Errorf("slots joined to their merchant: %d, %v", n, err)
	}
	if _, err := sq.W.Exec(`INSERT INTO slots (merchant_id, title, start_ms, end_ms, created_ms) VALUES (999, 'orphan', 1, 2, 0)`); err == nil {
		t.Error("a slot of no user was accepted: the foreign key was lost")
	}

	// New accounts carry on after the old ones, created at the clock's millisecond.
	now := time.Date(2031, 5, 6, 7, 8, 9, 123_456_789, time.UTC)
	b.Now = func() time.Time { return now }
	u, err := s.CreateUser(ctx, "new_user", "password123", model.RoleUser)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.User(ctx, u.ID)
	if err != nil || u.ID != int64(len(rows)+1) || !got.CreatedAt.Equal(now.Truncate(time.Millisecond)) || !u.CreatedAt.Equal(got.CreatedAt) {
		t.Fatalf("new user %+v read back as %+v, %v; want id %d created %s", u, got, err, len(rows)+1, now.Truncate(time.Millisecond))
	}
	if _, err := s.CreateUser(ctx, "OLD_NANO", "password123", model.RoleUser); db.ErrorCode(err) != db.ECONFLICT {
		t.Fatalf("a name taken before the migration, in other case: %v, want conflict", err)
	}
}
