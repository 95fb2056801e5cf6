package db_test

import (
	"path/filepath"
	"testing"

	"github.com/seckill/seckill/db"
)

// Migrations run once: reopening the same file applies nothing again and keeps the data.
func TestMigrationsApplyOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	s, err := db.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	var applied int
	s.R.QueryRow(`SELECT COUNT(*) FROM migrations`).Scan(&applied)
	if applied == 0 {
		t.Fatal("no migration recorded")
	}
	if _, err := s.W.Exec(`INSERT INTO users (username, password_hash, role, created_at) VALUES ('keep', 'x', 'user', 'now')`); err != nil {
		t.Fatal(err)
	}
	var mode string
	s.R.QueryRow(`PRAGMA journal_mode`).Scan(&mode)
	if mode != "wal" {
		t.Errorf("journal mode %q, want wal", mode)
	}
	s.Close()

	s, err = db.OpenSQLite(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	var again, users int
	s.R.QueryRow(`SELECT COUNT(*) FROM migrations`).Scan(&again)
	s.R.QueryRow(`SELECT COUNT(*) FROM users WHERE username = 'keep'`).Scan(&users)
	if again != applied || users != 1 {
		t.Fatalf("after reopen: %d migrations (want %d), %d kept users (want 1)", again, applied, users)
	}
}

// Concurrent writers never see "database is locked": writes queue on the one writer connection.
func TestConcurrentWritesDoNotLock(t *testing.T) {
	s, err := db.OpenSQLite(filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	errs := make(chan error, 200)
	for i := 0; i < 200; i++ {
		go func(i int) {
			_, err := s.W.Exec(`INSERT INTO users (username, password_hash, role, created_at) VALUES (?, 'x', 'user', 'now')`, "w"+string(rune('a'+i%26))+string(rune('a'+i/26)))
			errs <- err
		}(i)
	}
	for i := 0; i < 200; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
