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
