package sale

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/model"
)

// roadHook records the stack of the goroutine that sends decideScript.
type roadHook struct {
	mu     sync.Mutex
	stacks [][]runtime.Frame
}

func (h *roadHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roadHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *roadHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if a := cmd.Args(); len(a) > 1 && a[1] == decideScript.Hash() {
			pcs := make([]uintptr, 64)
			frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
			var stack []runtime.Frame
			for {
				f, more := frames.Next()
				stack = append(stack, f)
				if !more {
					break
				}
			}
			h.mu.Lock()
			h.stacks = append(h.stacks, stack)
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

// The grab's road to Redis stays short: on the stack that sends
// decideScript, a first-come grab has come from Decide through this
// package's engine.go, db/groupcommit, engine.go again and db/backend's
// Eval, and no other file of the repository; no file is entered more than
// twice. (The stages, the refusal memo and the route return before it:
// the stages a goods asks nothing of are passed by, TestQuietStageIsPassedBy.)
func TestGrabRoadToRedis(t *testing.T) {
	for _, shards := range []int{1, 3} {
		s, _ := newTestSale(t, 1, 1, 1) // goods 2 is loaded below, with its buckets
		now := time.Now()
		const goodsID = 2
		g := &model.Goods{ID: goodsID, SlotID: 1, SeckillPriceCents: 100, Stock: 100, LimitPerUser: 1, Shards: shards,
			StartAt: now.Add(-time.Minute), EndAt: now.Add(time.Hour), State: model.SlotLive}
		if _, err := s.Load(context.Background(), g); err != nil {
			t.Fatal(err)
		}
		h := new(roadHook)
		s.Redis.AddHook(h) // a cluster client runs its hooks in the caller's goroutine too
		for u := int64(1); u <= 3; u++ {
			if o := s.Decide(context.Background(), []Grab{{User: u, Goods: goodsID}})[0]; o.Err != nil {
				t.Fatal(o.Err)
			}
		}
		_, self, _, _ := runtime.Caller(0)
		root := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(self))))) // the repository
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.stacks) != 3 {
			t.Fatalf("shards %d: %d calls of decideScript for 3 grabs", shards, len(h.stacks))
		}
		for _, stack := range h.stacks {
			var road []string // the repository's files on the stack, from Redis back to Decide
			for _, f := range stack {
				if strings.HasPrefix(f.Function, "github.com/redis/go-redis/") {
					road = nil // what runs below the Redis client (the test client's hooks) is no road
					continue
				}
				if !strings.HasPrefix(f.File, root+"/") || strings.HasSuffix(f.File, "_test.go") {
					continue
				}
				file := strings.TrimPrefix(f.File, root+"/")
				if len(road) == 0 || road[len(road)-1] != file {
					road = append(road, file)
				}
			}
			want := []string{"db/backend/backend.go", "db/goods/internal/sale/engine.go", "db/groupcommit/groupcommit.go", "db/goods/internal/sale/engine.go"}
			if strings.Join(road, " ← ") != strings.Join(want, " ← ") {
				t.Fatalf("shards %d: the road to Redis is\n%s\nwant\n%s", shards, strings.Join(road, " ← "), strings.Join(want, " ← "))
			}
		}
	}
}
