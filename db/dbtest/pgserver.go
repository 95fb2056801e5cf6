package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// PGServer is a PostgreSQL server a test started for itself, to restart or
// kill mid-sale: the shared DATABASE_URL server is every test's and must
// stay up. Its one database is "postgres", empty until a process migrates it.
type PGServer struct {
	URL string

	t    testing.TB
	bin  string // the folder of initdb, pg_ctl and postgres
	data string
	port int
	log  string
}

// StartPostgres initialises a cluster in a temporary folder and starts it on
// a free loopback port (trust authentication, no socket file outside the
// folder), waits until it answers, and stops it at the test's end. The test
// is skipped when no PostgreSQL server binaries are installed
// (/usr/lib/postgresql/*/bin, as Debian's postgresql package puts them).
// Run as root, the server runs as the postgres user, as initdb demands.
func StartPostgres(t testing.TB) *PGServer {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		t.Skip("no PostgreSQL server binaries (/usr/lib/postgresql/*/bin): this test starts a server of its own (apt-get install postgresql)")
	}
	sort.Strings(bins)
	dir, err := os.MkdirTemp("", "pgserver-")
	if err != nil {
		t.Fatal(err)
	}
	s := &PGServer{t: t, bin: filepath.Dir(bins[len(bins)-1]), data: filepath.Join(dir, "data"), port: freePort(t), log: filepath.Join(dir, "postgres.log")}
	if os.Geteuid() == 0 { // initdb refuses root: hand the folder to postgres
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			t.Skip("running as root and there is no postgres user to run PostgreSQL as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		s.pgCtl("stop", "-m", "immediate")
		os.RemoveAll(dir)
	})
	if out, err := s.run("initdb", "-D", s.data, "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	s.Start()
	return s
}

// run is the named server program as the user the server runs as.
func (s *PGServer) run(name string, args ...string) *exec.Cmd {
	path := filepath.Join(s.bin, name)
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

func (s *PGServer) pgCtl(args ...string) ([]byte, error) {
	return s.run("pg_ctl", append([]string{"-D", s.data, "-l", s.log}, args...)...).CombinedOutput()
}

// Start starts the server (again) and waits until it answers a query.
func (s *PGServer) Start() {
	s.t.Helper()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off", s.port, filepath.Dir(s.data))
	if out, err := s.pgCtl("start", "-w", "-o", opts); err != nil {
		b, _ := os.ReadFile(s.log)
		s.t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, b)
	}
	db, err := sql.Open("pgx", s.URL)
	if err != nil {
		s.t.Fatal(err)
	}
	defer db.Close()
	for i := 0; db.PingContext(context.Background()) != nil; i++ {
		if i == 1000 {
			s.t.Fatalf("PostgreSQL on port %d does not answer", s.port)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Crash stops the server as a crash would (pg_ctl stop -m immediate: every
// backend ends at once, no checkpoint; the next start recovers from the WAL).
func (s *PGServer) Crash() {
	s.t.Helper()
	if out, err := s.pgCtl("stop", "-m", "immediate"); err != nil {
		s.t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}
