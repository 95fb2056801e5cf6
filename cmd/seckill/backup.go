package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/seckill/seckill/db/goods"
)

// runBackup is `seckill backup <file> [flags]`: a consistent copy of the
// durable store, taken while the shop serves, from the same configuration
// as the server (DATABASE_URL, DB_PATH).
//
// SQLite: VACUUM INTO, on a read-only connection of its own. It reads one
// snapshot in one read transaction, which in WAL mode never blocks the
// server's writer (nor is blocked by it), so the copy is the store as it was
// at one commit, with every flush before it and none after; it needs nothing
// of the driver beyond SQL, and writes a compact file. (The online backup API,
// sqlite3_backup_step, would copy page by page and start again whenever the
// server commits between steps, which during a sale is every flush.) The
// copy is written beside the target, synced, checked (PRAGMA quick_check)
// and renamed into place, so <file> is whole or absent.
//
// PostgreSQL: pg_dump in its custom format (restore with pg_restore), run
// when it is on PATH; otherwise the command says how to run it.
func runBackup(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New("usage: seckill backup <file> [flags]: a consistent copy of the store (SQLite: VACUUM INTO; PostgreSQL: pg_dump -Fc)")
	}
	target := args[0]
	cfg, err := ParseConfig(args[1:], os.Getenv)
	if err != nil {
		return err
	}
	if cfg.DatabaseURL != "" {
		return pgDump(ctx, cfg.DatabaseURL, target, out)
	}
	return sqliteBackup(ctx, cfg.DBPath, target, out)
}

// sqliteBackup copies the SQLite store at path into target (see runBackup).
func sqliteBackup(ctx context.Context, path, target string, out io.Writer) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no SQLite store at DB_PATH=%s: %w", path, err)
	}
	if _, err := os.Stat(target); err == nil {
		return fmt.Errorf("%s exists: give a new file", target)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	// mode=ro: the backup never writes to the store; the busy timeout rides
	// over a checkpoint in progress.
	src, err := sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=10000")
	if err != nil {
		return err
	}
	defer src.Close()
	partial := target + ".partial"
	os.Remove(partial)
	defer os.Remove(partial) // gone once renamed
	// A backup holds every order and account: made 0600 before a byte is in
	// it (VACUUM INTO fills an empty file and keeps its mode).
	if err := privateFile(partial); err != nil {
		return err
	}
	if _, err := src.ExecContext(ctx, `VACUUM INTO ?`, partial); err != nil {
		return fmt.Errorf("back up %s: %w", path, err)
	}
	if err := syncFile(partial); err != nil {
		return err
	}
	var check string
	var orders int64
	copyDB, err := sql.Open("sqlite3", "file:"+partial+"?mode=ro")
	if err != nil {
		return err
	}
	err = copyDB.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&check)
	if err == nil && check != "ok" {
		err = fmt.Errorf("quick_check: %s", check)
	}
	if err == nil {
		err = copyDB.QueryRowContext(ctx, `SELECT COUNT(*) FROM orders`).Scan(&orders)
	}
	copyDB.Close()
	if err != nil {
		return fmt.Errorf("the copy of %s does not read back: %w", path, err)
	}
	if err := os.Rename(partial, target); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(target)); err == nil {
		d.Sync()
		d.Close()
	}
	fmt.Fprintf(out, "backed up SQLite %s to %s (%d orders); keep session.secret and admin.password from %s with it unless SESSION_SECRET and ADMIN_PASSWORD are set\n",
		path, target, orders, filepath.Dir(path))
	return nil
}

// privateFile creates path empty, readable and writable by its owner only.
func privateFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil { // whatever the umask
		f.Close()
		return err
	}
	return f.Close()
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// pgDump runs pg_dump -Fc of the PostgreSQL store into target, or says how.
func pgDump(ctx context.Context, databaseURL, target string, out io.Writer) error {
	bin, err := exec.LookPath("pg_dump")
	if err != nil {
		return fmt.Errorf("DATABASE_URL is PostgreSQL and pg_dump is not on PATH: install PostgreSQL's client (same major version as the server, or newer) and run\n  pg_dump --format=custom --file=%s \"$DATABASE_URL\"\n(docs/OPERATIONS.md, \"Backups and restore\")", target)
	}
	if _, err := os.Stat(target); err == nil {
		return fmt.Errorf("%s exists: give a new file", target)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	partial := target + ".partial"
	defer os.Remove(partial)
	if err := privateFile(partial); err != nil { // pg_dump writes into it, keeping its mode
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "--format=custom", "--file="+partial, "--dbname="+databaseURL)
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pg_dump: %w", err)
	}
	if err := syncFile(partial); err != nil {
		return err
	}
	if err := os.Rename(partial, target); err != nil {
		return err
	}
	fmt.Fprintf(out, "backed up PostgreSQL to %s with pg_dump (custom format: restore with pg_restore)\n", target)
	return nil
}

// runResendOrders is `seckill resend-orders [flags]`: after the store was
// restored from a backup, queue every order Redis holds for the flush again
// and flush, so the store takes back the orders flushed after the backup
// (docs/OPERATIONS.md, "Backups and restore"). It runs as a worker for the
// moment it takes, on the server's configuration.
func runResendOrders(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := ParseConfig(args, os.Getenv)
	if err != nil {
		return err
	}
	m := NewMain(cfg, ModeWorker)
	m.Log = discardLogger()
	if err := m.Open(ctx); err != nil {
		m.Close()
		return err
	}
	n, err := resendOrders(ctx, m)
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "queued %d orders from Redis for the store again and flushed them; check each goods' stats (drift: none)\n", n)
	return nil
}

// resendOrders queues the goods' orders Redis holds for the flush again and
// flushes them into the store, then brings the store's remaining stock in
// line with Redis.
func resendOrders(ctx context.Context, m *Main) (int64, error) {
	g := service[*goods.Service](m, "goods")
	n, err := g.ResendOrders(ctx)
	if err != nil {
		return n, err
	}
	if err := m.flushAll(ctx); err != nil {
		return n, err
	}
	return n, g.SyncStock(ctx, 0) // the store's remaining stock, as Redis has it
}
