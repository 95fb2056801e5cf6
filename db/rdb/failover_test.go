package rdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// The errors a node going away or a failover makes are told apart from the
// command's own replies, as go-redis hands them over and wrapped by callers.
func TestFailoverError(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	ctx := context.Background()
	// reply is the error go-redis makes of a server's error reply msg.
	reply := func(msg string) error {
		err := c.Eval(ctx, "return redis.error_reply(ARGV[1])", nil, msg).Err()
		if err == nil || err.Error() != msg {
			t.Fatalf("error reply %q came back as %v", msg, err)
		}
		return err
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{refused, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{io.EOF, true},
		{fmt.Errorf("grab goods 1: %w", io.EOF), true},
		{syscall.ECONNRESET, true},
		{reply("CLUSTERDOWN The cluster is down"), true},
		{fmt.Errorf("grab goods 1: %w", reply("CLUSTERDOWN Hash slot not served")), true},
		{fmt.Errorf("grab goods 1: %w", reply("TRYAGAIN Multiple keys request during rehashing of slot")), true},
		{fmt.Errorf("grab goods 1: %w", reply("LOADING Redis is loading the dataset in memory")), true},
		{fmt.Errorf("grab goods 1: %w", reply("READONLY You can't write against a read only replica.")), true},
		{fmt.Errorf("grab goods 1: %w", reply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.")), true},
		{fmt.Errorf("grab goods 1: %w", reply("MOVED 4663 127.0.0.1:7001")), true},
		{fmt.Errorf("grab goods 1: %w", reply("ASK 4663 127.0.0.1:7001")), true},
		{nil, false},
		{redis.Nil, false},
		{fmt.Errorf("grab goods 1: %w", context.Canceled), false},
		{fmt.Errorf("grab goods 1: %w", reply("NOSCRIPT No matching script. Please use EVAL.")), false},
		{fmt.Errorf("grab goods 1: %w", reply("ERR user_script:3: attempt to compare nil with number")), false},
		{fmt.Errorf("grab goods 1: %w", reply("WRONGTYPE Operation against a key holding the wrong kind of value")), false},
		{errors.New("grab goods 1: unexpected answer \"what\""), false},
	} {
		if got := FailoverError(tc.err); got != tc.want {
			t.Errorf("FailoverError(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// A cluster's nodes fail fast unless the URL says otherwise.
func TestFailFast(t *testing.T) {
	_, o, err := parseURL("redis://h1:7000,h2:7001")
	if err != nil {
		t.Fatal(err)
	}
	failFast(o)
	if o.DialTimeout != time.Second || o.DialerRetries != 1 || o.ReadTimeout != time.Second {
		t.Fatalf("dial timeout %v, dials %d, read timeout %v, want 1s, 1, 1s", o.DialTimeout, o.DialerRetries, o.ReadTimeout)
	}
	_, o, err = parseURL("redis://h1:7000,h2:7001?dial_timeout=3s&dialer_retries=4&read_timeout=2s")
	if err != nil {
		t.Fatal(err)
	}
	failFast(o)
	if o.DialTimeout != 3*time.Second || o.DialerRetries != 4 || o.ReadTimeout != 2*time.Second {
		t.Fatalf("dial timeout %v, dials %d, read timeout %v, want the URL's 3s, 4, 2s", o.DialTimeout, o.DialerRetries, o.ReadTimeout)
	}
}
