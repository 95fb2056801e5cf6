package sqldb_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/sqldb"
)

// Processes that open one fresh store at the same moment apply each
// migration exactly once between them (PostgreSQL: under the advisory lock;
// SQLite: in immediate transactions), and reopening applies nothing again
// and keeps the data. Runs on PostgreSQL when DATABASE_URL is set.
func TestMigrationsApplyOnce(t *testing.T) {
	ctx := context.Background()
	dialect := sqldb.SQLite
	path, url := filepath.Join(t.TempDir(), "m.db"), ""
	if os.Getenv("DATABASE_URL") != "" {
		dialect, url = sqldb.Postgres, dbtest.EmptyPostgresURL(t)
	}
	migs, err := sqldb.Migrations(dialect)
	if err != nil || len(migs) == 0 {
		t.Fatalf("%s migrations: %d, %v", dialect, len(migs), err)
	}
	const processes = 4
	stores := make([]*sqldb.DB, processes)
	errs := make([]error, processes)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range stores {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			stores[i], errs[i] = sqldb.Open(ctx, url, path)
		}(i)
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	s := stores[0]
	if s.Dialect != dialect {
		t.Fatalf("opened %s, want %s", s.Dialect, dialect)
	}
	var applied, distinct int
	if err := s.R.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT name) FROM migrations`).Scan(&applied, &distinct); err != nil {
		t.Fatal(err)
	}
	if applied != len(migs) || distinct != len(migs) {
		t.Fatalf("%d migrations recorded (%d distinct), want each of %d once", applied, distinct, len(migs))
	}
	if _, err := s.W.Exec(`INSERT INTO users (username, password_hash, role, created_ms) VALUES ('keep', 'x', 'user', 0)`); err != nil {
		t.Fatal(err)
	}
	if dialect == sqldb.SQLite {
		var mode string
		s.R.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
		if mode != "wal" {
			t.Errorf("journal mode %q, want wal", mode)
		}
	}
	for _, s := range stores {
		s.Close()
	}

	s, err = sqldb.Open(ctx, url, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	var again, users int
	s.R.QueryRow(`SELECT COUNT(*) FROM migrations`).Scan(&again)
	s.R.QueryRow(`SELECT COUNT(*) FROM users WHERE username = 'KEEP'`).Scan(&users) // usernames match in any case
	if again != applied || users != 1 {
		t.Fatalf("after reopen: %d migrations (want %d), %d kept users (want 1)", again, applied, users)
	}
	t.Logf("migrated %s: %d migrations", s, again)
}
