package dbtest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/rdb"
)

// slotGuard refuses, as a Redis Cluster does (CROSSSLOT), a command or
// script whose keys lie in two cluster slots, and fails the test: the
// embedded Redis and a single server accept such a command, so without the
// guard a test run off the cluster would not see it.
type slotGuard struct {
	mu      sync.Mutex
	t       testing.TB
	stopped bool // the test ended; later commands are not its
}

// GuardSlots makes c refuse, until the test ends, a command whose keys lie in
// two cluster slots, and fail the test when one is sent (Redis does the first).
func GuardSlots(t testing.TB, c redis.UniversalClient) {
	g := &slotGuard{t: t}
	c.AddHook(g)
	t.Cleanup(func() {
		g.mu.Lock()
		g.stopped = true
		g.mu.Unlock()
	})
}

func (g *slotGuard) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *slotGuard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := g.check(cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (g *slotGuard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if err := g.check(cmd); err != nil {
				cmd.SetErr(err)
				return err
			}
		}
		return next(ctx, cmds)
	}
}

func (g *slotGuard) check(cmd redis.Cmder) error {
	keys := commandKeys(cmd.Args())
	if len(keys) < 2 {
		return nil
	}
	slot := rdb.Slot(keys[0])
	for _, k := range keys[1:] {
		if rdb.Slot(k) != slot {
			err := fmt.Errorf("CROSSSLOT %s names keys of two cluster slots: %q (%d) and %q (%d)", cmd.Name(), keys[0], slot, k, rdb.Slot(k))
			g.mu.Lock()
			if !g.stopped {
				g.t.Errorf("dbtest: %v", err)
			}
			g.mu.Unlock()
			return err
		}
	}
	return nil
}

// commandKeys are the keys a command names, for the commands that may name
// several (a script's KEYS, DEL k1 k2, MGET, SUNION, RENAME, ...); nil for others.
func commandKeys(args []any) []string {
	if len(args) < 2 {
		return nil
	}
	str := func(from, to, step int) []string {
		var keys []string
		for i := from; i < to && i < len(args); i += step {
			keys = append(keys, fmt.Sprint(args[i]))
		}
		return keys
	}
	counted := func(at int) []string { // numkeys at args[at], the keys after it
		if at >= len(args) {
			return nil
		}
		n, err := strconv.Atoi(fmt.Sprint(args[at]))
		if err != nil {
			return nil
		}
		return str(at+1, at+1+n, 1)
	}
	switch name := strings.ToLower(fmt.Sprint(args[0])); name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return counted(2)
	case "del", "unlink", "exists", "touch", "mget", "watch", "sinter", "sunion", "sdiff",
		"sinterstore", "sunionstore", "sdiffstore", "pfcount", "pfmerge":
		return str(1, len(args), 1)
	case "rename", "renamenx", "rpoplpush", "lmove", "blmove", "smove", "copy", "brpoplpush", "zrangestore", "geosearchstore":
		return str(1, 3, 1)
	case "mset", "msetnx":
		return str(1, len(args), 2)
	case "zunionstore", "zinterstore", "zdiffstore":
		return append(str(1, 2, 1), counted(2)...)
	case "zunion", "zinter", "zdiff", "zintercard", "sintercard", "lmpop", "zmpop":
		return counted(1)
	case "blmpop", "bzmpop":
		return counted(2)
	case "blpop", "brpop", "bzpopmin", "bzpopmax":
		return str(1, len(args)-1, 1)
	case "bitop":
		return str(2, len(args), 1)
	}
	return nil
}
