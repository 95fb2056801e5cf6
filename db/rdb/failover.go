package rdb

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// FailoverError tells whether err is how a Redis command fails while a node
// goes away or a cluster fails over: the connection refused, reset, closed
// (EOF) or timed out, or a node's refusal while the slot's master is being
// replaced (CLUSTERDOWN, TRYAGAIN, MASTERDOWN, LOADING, READONLY,
// NOREPLICAS, and a MOVED or ASK left after go-redis's redirects ran out).
// Such a command may be tried again shortly; it is not a bug. Replies of the
// command itself (redis.Nil, a script's error, NOSCRIPT) and the caller's
// own cancellation are not.
func FailoverError(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	if _, moved := redis.IsMovedError(err); moved {
		return true
	}
	if _, ask := redis.IsAskError(err); ask {
		return true
	}
	return redis.IsClusterDownError(err) || redis.IsTryAgainError(err) || redis.IsMasterDownError(err) ||
		redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsNoReplicasError(err)
}

// failFast sets the cluster options a REDIS_URL leaves unset so that the
// commands of a node that died or was cut off fail within a second and go
// again to the node the reloaded slot map names (reloadOnFailover), rather
// than hang: go-redis by default waits 5 s for a connection, dials 5 times
// (100 ms apart) before giving up, and waits 5 s for a reply, on each of
// its 1+MaxRedirects attempts. A Redis command of the hot path takes well
// under a millisecond; blocking commands get their own longer timeouts.
func failFast(o *redis.ClusterOptions) {
	if o.DialTimeout == 0 {
		o.DialTimeout = time.Second
	}
	if o.DialerRetries == 0 {
		o.DialerRetries = 1 // the command is tried again anyway, on the then current map
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = time.Second // WriteTimeout follows it
	}
}

// reloadOnFailover, a hook on the client of each node of a cluster, asks the
// cluster client for a fresh slot map whenever a command or a pipeline sent
// to the node fails with a FailoverError. go-redis reloads the map
// by itself on MOVED and READONLY only: a master that died leaves its slots
// mapped to its address, so every command of those slots fails (connection
// refused, EOF, timeouts) until the periodic reload (ClusterStateReloadInterval,
// 60 s by default), long after its replica took them over. ReloadState is
// lazy and coalesced (one CLUSTER SLOTS at a time, then at most one more
// after 200 ms), so a storm of failures costs a few reloads a second.
// Every such failure is counted in n (Redis.Failovers); on one server (c
// nil) the hook only counts.
type reloadOnFailover struct {
	c *redis.ClusterClient
	n *atomic.Int64
}

func (h reloadOnFailover) failed(ctx context.Context) {
	h.n.Add(1)
	if h.c != nil {
		h.c.ReloadState(ctx)
	}
}

func (h reloadOnFailover) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnFailover) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if FailoverError(err) {
			h.failed(ctx)
		}
		return err
	}
}

func (h reloadOnFailover) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		// A pipeline's error is its first command's; any of them may
		// carry the failover (a MOVED, say, while the others succeeded).
		for _, cmd := range cmds {
			if FailoverError(cmd.Err()) {
				h.failed(ctx)
				break
			}
		}
		return err
	}
}
