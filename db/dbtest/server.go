package dbtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server a test started for itself: a topology the shared
// REDIS_URL cannot give (a master and its replica) or one the test breaks
// (a replica stopped or killed).
type Server struct {
	Addr   string
	Client *redis.Client
	cmd    *exec.Cmd
	t      testing.TB
	dir    string
	args   []string // the command line, program first
}

// StartServer starts a redis-server on a free loopback port with args added
// (say "--replicaof", "127.0.0.1", "6379"), waits until it answers, and
// stops it at the test's end; the test is skipped when there is no
// redis-server on PATH.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server on PATH: this test starts servers of its own (apt-get install redis-server)")
	}
	port := freePort(t)
	dir := t.TempDir()
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), t: t, dir: dir,
		args: append([]string{bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, args...)}
	s.Client = redis.NewClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() {
		s.Client.Close()
		s.cmd.Process.Signal(syscall.SIGCONT)
		s.cmd.Process.Kill()
		s.cmd.Wait()
	})
	s.start()
	return s
}

// start runs the server and waits until it answers.
func (s *Server) start() {
	s.t.Helper()
	cmd := exec.Command(s.args[0], s.args[1:]...)
	log, err := os.OpenFile(s.dir+"/redis.log", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer log.Close() // the process has its own descriptor
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd = cmd
	for i := 0; s.Client.Ping(context.Background()).Err() != nil; i++ {
		if i == 500 {
			b, _ := os.ReadFile(s.dir + "/redis.log")
			s.t.Fatalf("redis-server on %s did not start:\n%s", s.Addr, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Restart kills the server (SIGKILL) and starts it again on the same
// port, empty: a node restarted without persistence.
func (s *Server) Restart() {
	s.t.Helper()
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.start()
}

// StartReplica starts a replica of s and waits until the master counts it connected and in sync.
func (s *Server) StartReplica() *Server {
	s.t.Helper()
	host, port, _ := net.SplitHostPort(s.Addr)
	s.Client.ConfigSet(context.Background(), "repl-diskless-sync-delay", "0") // sync now, not in 5 s
	r := StartServer(s.t, "--replicaof", host, port)
	for i := 0; ; i++ {
		info := r.Client.Info(context.Background(), "replication").Val()
		if containsLine(info, "master_link_status:up") && containsLine(s.Client.Info(context.Background(), "replication").Val(), "connected_slaves:1") {
			return r
		}
		if i == 1000 {
			s.t.Fatalf("replica %s did not sync with %s:\n%s", r.Addr, s.Addr, info)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Signal sends the server sig: SIGSTOP and SIGCONT pause and resume it, SIGKILL ends it.
func (s *Server) Signal(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
}

func containsLine(info, line string) bool {
	for _, l := range strings.Split(info, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

// freePort is a loopback port free right now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
