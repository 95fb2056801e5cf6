package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/seckill/seckill/cmd/seckill/app"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/redpacket"
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
	cfg, err := app.ParseConfig(args[1:], os.Getenv)
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
// restored from a backup, queue every goods order, red packet claim and
// coupon grab Redis holds for the flush again and flush, so the store takes
// back what was flushed after the backup (docs/OPERATIONS.md, "Backups and
// restore"), and report what of each kind the store still lacks. It runs as
// a worker for the moment it takes, on the server's configuration.
func runResendOrders(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := app.ParseConfig(args, os.Getenv)
	if err != nil {
		return err
	}
	m := app.NewMain(cfg, app.ModeWorker)
	m.Log = app.DiscardLogger()
	if err := m.Open(ctx); err != nil {
		m.Close()
		return err
	}
	r, err := resendOrders(ctx, m)
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprint(out, r)
	return nil
}

// resent is what resendOrders queued again of each kind, and per kind the
// drift left after the flush: the red packets and coupon templates whose
// claims or grabs Redis holds and the store lacks (none after a good run).
type resent struct {
	orders, claims, grabs, uses int64
	claimsMissing               map[int64]int64 // red packet → claims the store lacks
	grabsMissing                map[int64]int64 // coupon template → grabs the store lacks
}

func (r resent) String() string {
	drift := func(m map[int64]int64, what string) string {
		if len(m) == 0 {
			return "drift: none"
		}
		ids := slices.Sorted(maps.Keys(m))
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = fmt.Sprintf("%s %d lacks %d", what, id, m[id])
		}
		return "drift: " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("goods orders: queued %d from Redis for the store again and flushed them; check each goods' stats (drift: none)\n"+
		"red packet claims: queued %d again and flushed them; %s\n"+
		"coupons: queued %d grabs again and flushed them, %d uses marked from the paid orders; %s\n",
		r.orders, r.claims, drift(r.claimsMissing, "red packet"), r.grabs, r.uses, drift(r.grabsMissing, "coupon"))
}

// resendOrders queues the goods' orders, the red packets' claims and the
// coupons' grabs Redis holds for the flush again and flushes them into the
// store, then brings the store's remaining stock in line with Redis, marks
// used the coupons the paid orders were paid with, and reads the drift of
// red packets and coupons.
func resendOrders(ctx context.Context, m *app.Main) (resent, error) {
	var r resent
	g := app.AreaService[*goods.Service](m, "goods")
	rp := app.AreaService[*redpacket.Service](m, "redpackets")
	cs := app.AreaService[*coupon.Service](m, "coupons")
	var err error
	if r.orders, err = g.ResendOrders(ctx); err != nil {
		return r, err
	}
	if r.claims, err = rp.ResendClaims(ctx); err != nil {
		return r, err
	}
	if r.grabs, err = cs.ResendGrabs(ctx); err != nil {
		return r, err
	}
	if err := m.FlushAll(ctx); err != nil {
		return r, err
	}
	if err := g.SyncStock(ctx, 0); err != nil { // the store's remaining stock, as Redis has it
		return r, err
	}
	if r.uses, err = cs.RestoreUses(ctx); err != nil {
		return r, err
	}
	if r.claimsMissing, err = rp.ClaimsMissing(ctx); err != nil {
		return r, err
	}
	r.grabsMissing, err = cs.GrabsMissing(ctx)
	return r, err
}
