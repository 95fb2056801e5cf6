package sqldb_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/seckill/seckill/db/sqldb"
)

// On SQLite, concurrent writers never see "database is locked": writes queue on the one writer connection.
func TestConcurrentWritesDoNotLock(t *testing.T) {
	s, err := sqldb.OpenSQLite(filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.W.Stats().MaxOpenConnections; got != 1 {
		t.Fatalf("writer pool allows %d connections, want 1", got)
	}

	// While a write transaction holds the writer, another write must wait in
	// Go's pool for that connection, not open a second one and contend
	// inside SQLite (where busy_timeout would be all that saves it).
	tx, err := s.W.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(insertUser, "held"); err != nil {
		t.Fatal(err)
	}
	queued := make(chan error, 1)
	go func() {
		_, err := s.W.Exec(insertUser, "queued")
		queued <- err
	}()
	deadline := time.Now().Add(time.Minute)
	for s.W.Stats().WaitCount == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a second write did not queue for the writer connection (pool stats %+v)", s.W.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-queued; err != nil {
		t.Fatalf("queued write: %v", err)
	}

	const writers = 200
	start := make(chan struct{})
	errs := make(chan error, writers)
	for i := 0; i < writers; i++ {
		go func(i int) {
			<-start
			_, err := s.W.Exec(insertUser, fmt.Sprintf("w%d", i))
			errs <- err
		}(i)
	}
	close(start)
	for i := 0; i < writers; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := s.R.QueryRow(`SELECT COUNT(*) FROM users WHERE username IN ('held', 'queued') OR username LIKE 'w%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != writers+2 {
		t.Fatalf("%d users written, want %d", n, writers+2)
	}
	if st := s.W.Stats(); st.OpenConnections > 1 {
		t.Fatalf("writer pool opened %d connections, want 1", st.OpenConnections)
	}
}

const insertUser = `INSERT INTO users (username, password_hash, role, created_ms) VALUES (?, 'x', 'user', 0)`
