package redpacket_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/redpacket"
	"github.com/seckill/seckill/db/sqldb"
)

// timesMigration is the migration that turned the red packets' text times into unix milliseconds.
const timesMigration = "0006_redpacket_times.sql"

// Rows the previous release wrote with text times read back through the
// service after the migration as the same instants, to the millisecond:
// the fixed-width layout the code wrote (…05.000Z) and, should a row have
// been written by hand, RFC 3339 in whole seconds, RFC 3339 Nano (full and
// trimmed) and an offset. The sweep restores and expires by the migrated
// times, no packet ID is reused, and the foreign key, its cascade and the
// indexes survive.
func TestTimesMigration(t *testing.T) {
	ctx := context.Background()
	path, old := dbtest.SQLiteBefore(t, timesMigration)
	exec := func(q string, args ...any) int64 {
		t.Helper()
		res, err := old.Exec(q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		id, _ := res.LastInsertId()
		return id
	}
	users := map[string]int64{}
	for _, name := range []string{"shop", "alice", "bob", "carol", "dave", "erin"} {
		users[name] = exec(`INSERT INTO users (username, password_hash, role, created_at) VALUES (?, 'x', 'user', '2030-01-01T00:00:00Z')`, name)
	}
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UTC()
	}
	packet := `INSERT INTO redpackets (owner_id, title, total_cents, count, mode, status, claimed_count, expires_at, created_at) VALUES (?, ?, ?, ?, 'random', 'active', ?, ?, ?)`
	share := `INSERT INTO redpacket_shares (redpacket_id, seq, amount_cents, user_id, grabbed_at) VALUES (?, ?, ?, ?, ?)`

	// Live: four claims flushed in the text forms, one share open.
	live := exec(packet, users["shop"], "live", 1500, 5, 4, "2030-01-02T03:04:05.678Z", "2029-12-31T23:59:59.001Z")
	wantGrabs := []struct {
		user   string
		amount int64
		text   string
		at     time.Time
	}{
		{"alice", 100, "2030-01-01T00:00:01.234Z", at("2030-01-01T00:00:01.234Z")},       // what formatRPTime wrote
		{"bob", 200, "2030-01-01T00:00:02Z", at("2030-01-01T00:00:02Z")},                 // RFC 3339
		{"carol", 300, "2030-01-01T00:00:03.123456789Z", at("2030-01-01T00:00:03.123Z")}, // RFC 3339 Nano
		{"dave", 300, "2030-01-01T08:00:04.5+08:00", at("2030-01-01T00:00:04.500Z")},     // trimmed, with an offset
	}
	for i, g := range wantGrabs {
		exec(share, live, i, g.amount, users[g.user], g.text)
	}
	exec(share, live, 4, 600, nil, nil)
	// Overdue: its expiry task never ran, so the sweep must find it by expires_ms.
	overdue := exec(packet, users["shop"], "overdue", 100, 2, 1, "2029-12-31T00:00:00.000Z", "2029-12-30T00:00:00.000Z")
	exec(share, overdue, 0, 50, users["alice"], "2029-12-30T12:00:00.000Z")
	exec(share, overdue, 1, 50, nil, nil)
	// Discarded at creation: its ID must never be handed out again.
	discarded := exec(packet, users["shop"], "discarded", 100, 1, 0, "2030-01-02T00:00:00.000Z", "2030-01-01T00:00:00.000Z")
	exec(`DELETE FROM redpackets WHERE id = ?`, discarded)
	old.Close()

	sq, err := sqldb.OpenSQLite(path)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Cleanup(func() { sq.Close() })
	now := at("2030-01-01T00:00:10Z")
	s := &redpacket.Service{Backend: backend.New(sq, dbtest.Redis(t).Client)}
	s.Now = func() time.Time { return now }

	p, err := s.Get(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	if want := at("2030-01-02T03:04:05.678Z"); !p.ExpiresAt.Equal(want) || !p.CreatedAt.Equal(at("2029-12-31T23:59:59.001Z")) {
		t.Fatalf("packet times %s / %s, want expiry %s and creation 2029-12-31T23:59:59.001Z", p.ExpiresAt, p.CreatedAt, want)
	}
	if p.Status != model.RedPacketActive || p.RemainingCount != 1 || p.RemainingCents != 600 {
		t.Fatalf("migrated packet %+v, want active with 1 share of 600 cents left", p)
	}
	g, err := s.Grabs(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Grabs) != len(wantGrabs) {
		t.Fatalf("%d grabs after the migration, want %d", len(g.Grabs), len(wantGrabs))
	}
	for i, w := range wantGrabs {
		if c := g.Grabs[i]; c.UserID != users[w.user] || c.AmountCents != w.amount || !c.GrabbedAt.Equal(w.at) {
			t.Errorf("grab %d (%q) reads %+v, want %s with %d cents at %s", i, w.text, c, w.user, w.amount, w.at.Format(time.RFC3339Nano))
		}
	}
	if list, err := s.Active(ctx); err != nil || len(list) != 1 || list[0].ID != live {
		t.Fatalf("active packets %v %v, want only packet %d (the other is overdue)", list, err, live)
	}

	// The sweep loads the live packet into the empty Redis and expires the overdue one.
	if err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Grab(ctx, users["alice"], live); db.ErrorCode(err) != db.EALREADY {
		t.Fatalf("a migrated claimant grabs again: %v, want already_grabbed", err)
	}
	if grab, err := s.Grab(ctx, users["erin"], live); err != nil || grab.AmountCents != 600 || !grab.GrabbedAt.Equal(now) {
		t.Fatalf("grab after the migration: %+v %v, want the last 600 cents at %s", grab, err, now)
	}
	if err := s.FlushAll(ctx, s.FlushClaims); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.Get(ctx, live); p.Status != model.RedPacketFinished {
		t.Fatalf("live packet %+v after its last share was flushed, want finished", p)
	}
	if g, _ := s.Grabs(ctx, live); len(g.Grabs) != 5 || !g.Grabs[4].GrabbedAt.Equal(now) {
		t.Fatalf("grabs after the flush %+v, want erin's at %s last", g, now)
	}
	if p, _ := s.Get(ctx, overdue); p.Status != model.RedPacketExpired || p.RefundedCents != 50 {
		t.Fatalf("overdue packet after the sweep %+v, want expired with 50 cents refunded", p)
	}

	created, err := s.Create(ctx, users["shop"], model.NewRedPacket{Title: "new", TotalCents: 100, Count: 2, Mode: model.RedPacketFixed})
	if err != nil {
		t.Fatal(err)
	}
	if created.ID <= discarded {
		t.Fatalf("new packet got ID %d, reusing the discarded packet's %d", created.ID, discarded)
	}

	// The schema: new columns, the foreign key and its cascade, the indexes, no leftovers.
	var cols []string
	for _, table := range []string{"redpackets", "redpacket_shares"} {
		rows, err := sq.R.Query(`SELECT name FROM pragma_table_info(?) WHERE name LIKE '%\_at' ESCAPE '\' OR name LIKE '%\_ms' ESCAPE '\'`, table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c string
			rows.Scan(&c)
			cols = append(cols, table+"."+c)
		}
		rows.Close()
	}
	if got, want := strings.Join(cols, " "), "redpackets.expires_ms redpackets.created_ms redpacket_shares.grabbed_ms"; got != want {
		t.Errorf("time columns %q, want %q", got, want)
	}
	var parent, onDelete string
	if err := sq.R.QueryRow(`SELECT "table", on_delete FROM pragma_foreign_key_list('redpacket_shares') WHERE "from" = 'redpacket_id'`).Scan(&parent, &onDelete); err != nil || parent != "redpackets" || onDelete != "CASCADE" {
		t.Errorf("shares' foreign key: %q %q %v, want redpackets ON DELETE CASCADE", parent, onDelete, err)
	}
	var schema []string
	rows, err := sq.R.Query(`SELECT name || ': ' || COALESCE(sql, '') FROM sqlite_master WHERE tbl_name LIKE 'redpacket%' AND type IN ('index', 'table') ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var row string
		rows.Scan(&row)
		schema = append(schema, row)
	}
	rows.Close()
	got := strings.Join(schema, "\n")
	for _, want := range []string{
		"redpacket_shares_user: CREATE UNIQUE INDEX redpacket_shares_user ON redpacket_shares (redpacket_id, user_id) WHERE user_id IS NOT NULL",
		"redpackets_owner: CREATE INDEX redpackets_owner ON redpackets (owner_id, id)",
		"redpackets_status: CREATE INDEX redpackets_status ON redpackets (status, expires_ms)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("schema lacks %q; it holds:\n%s", want, got)
		}
	}
	if strings.Contains(got, "_old") {
		t.Errorf("the migration left old tables behind:\n%s", got)
	}
	if _, err := sq.W.Exec(`DELETE FROM redpackets WHERE id = ?`, created.ID); err != nil {
		t.Fatal(err)
	}
	var orphans int
	sq.R.QueryRow(`SELECT COUNT(*) FROM redpacket_shares WHERE redpacket_id = ?`, created.ID).Scan(&orphans)
	if orphans != 0 {
		t.Errorf("deleting a packet left %d of its shares: the cascade is gone", orphans)
	}
}
