package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The generator sends exactly the requests asked for, counts every outcome
// and writes all three report files.
func TestRunAndReport(t *testing.T) {
	var calls atomic.Int64
	op := func(ctx context.Context, w int, i int64) string {
		calls.Add(1)
		time.Sleep(100 * time.Microsecond)
		if i%10 == 0 {
			return "sold_out"
		}
		return "ok"
	}
	closed := Run(context.Background(), Load{Name: "closed", Concurrency: 8, Requests: 500}, op)
	if closed.Requests != 500 || calls.Load() != 500 || closed.Codes["ok"] != 450 || closed.Codes["sold_out"] != 50 {
		t.Fatalf("closed loop: %d requests, %d calls, codes %v", closed.Requests, calls.Load(), closed.Codes)
	}
	if closed.Latency.P50 <= 0 || closed.Latency.Max < closed.Latency.P99 || closed.Latency.P99 < closed.Latency.P50 {
		t.Fatalf("percentiles out of order: %+v", closed.Latency)
	}
	open := Run(context.Background(), Load{Name: "open", Concurrency: 4, Requests: 200, Rate: 2000}, op)
	if open.Requests != 200 || !strings.HasPrefix(open.Mode, "open") {
		t.Fatalf("open loop: %+v", open)
	}
	r := &Report{StartedAt: time.Now(), Machine: Machine(), Target: "test", Results: []Result{closed, open},
		Checks: []Check{{Name: "no oversell", OK: true, Detail: "100 ≤ 100"}}}
	r.AddRatio("closed / open", "closed", "open")
	dir := t.TempDir()
	if err := r.WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"| closed | closed | 8 | 500 |", "sold_out 50", "closed / open", "no oversell | ok"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "report.png")); err != nil || st.Size() < 1000 {
		t.Fatalf("chart: %v", err)
	}
	if r.Failed() {
		t.Fatal("no check failed")
	}
	r.Checks = append(r.Checks, Check{Name: "sums", OK: false})
	if !r.Failed() {
		t.Fatal("a violated check must fail the run")
	}
}

// Rounds split each load's requests into turns: every request number is
// used once, every load gets all its requests, and the loads alternate.
func TestRunRounds(t *testing.T) {
	var mu sync.Mutex
	var order []string
	seen := map[string]map[int64]bool{"a": {}, "b": {}}
	op := func(name string) Op {
		return func(ctx context.Context, w int, i int64) string {
			mu.Lock()
			defer mu.Unlock()
			if seen[name][i] {
				t.Errorf("%s: request %d twice", name, i)
			}
			seen[name][i] = true
			if len(order) == 0 || order[len(order)-1] != name {
				order = append(order, name)
			}
			return "ok"
		}
	}
	res := RunRounds(context.Background(), 3, []Load{{Name: "a", Concurrency: 4, Requests: 100}, {Name: "b", Concurrency: 2, Requests: 31}}, []Op{op("a"), op("b")})
	if res[0].Requests != 100 || res[1].Requests != 31 || len(seen["a"]) != 100 || len(seen["b"]) != 31 {
		t.Fatalf("requests: %d %d, distinct %d %d", res[0].Requests, res[1].Requests, len(seen["a"]), len(seen["b"]))
	}
	for i := int64(0); i < 100; i++ {
		if !seen["a"][i] {
			t.Fatalf("a: request %d never ran", i)
		}
	}
	if strings.Join(order, "") != "ababab" {
		t.Fatalf("turns %v, want a and b alternating three times", order)
	}
	if res[0].Seconds <= 0 || res[0].Throughput <= 0 {
		t.Fatalf("result %+v", res[0])
	}
	if len(res[1].Timeline) < 3 { // every turn closes its last, short slice
		t.Fatalf("timeline of %d points for 3 turns", len(res[1].Timeline))
	}
}
