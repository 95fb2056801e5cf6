package rdb

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

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
