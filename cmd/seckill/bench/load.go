// Package bench drives load at seckill and reports it: closed- and open-loop
// load generation, HDR latency histograms, and reports as JSON, Markdown and
// a PNG chart. The scenarios themselves live in cmd/seckill/bench/scenarios.
package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Op performs one request for worker w as request number i and returns
// "ok" or the contract error code ("sold_out", …, or "transport" for a failed connection).
type Op func(ctx context.Context, w int, i int64) string

// Load is how to drive one scenario.
type Load struct {
	Name        string
	Concurrency int           // closed loop: workers each sending one request at a time
	Requests    int64         // stop after this many requests (0: no limit)
	Duration    time.Duration // stop after this long (0: no limit)
	Rate        float64       // > 0: open loop at this many requests a second; latency counts from the scheduled time
	Progress    io.Writer     // nil: no progress bar
	// Turn, when set, runs around each of the load's turns: it starts what
	// must run alongside (an attack), calls run, then stops it.
	Turn func(run func())
	// ProfileDir, when set, gets a CPU profile of each of the load's timed
	// turns alone (the process's: an in-process server's too), named
	// <load>-<round>.pprof: what one scenario costs, without the set-up
	// and the other scenarios a whole run's profile mixes in.
	ProfileDir string
}

// Percentiles are latencies in milliseconds.
type Percentiles struct {
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
}

// Point is one slice of a run's timeline.
type Point struct {
	At         float64 `json:"at_s"`
	Throughput float64 `json:"throughput"`
	P99        float64 `json:"p99_ms"`
}

// Result is what one scenario measured.
type Result struct {
	Name        string           `json:"name"`
	Mode        string           `json:"mode"`
	Concurrency int              `json:"concurrency"`
	Requests    int64            `json:"requests"`
	Seconds     float64          `json:"seconds"`
	Throughput  float64          `json:"throughput"`
	Latency     Percentiles      `json:"latency"`
	Codes       map[string]int64 `json:"codes"`
	Timeline    []Point          `json:"timeline"`
}

const (
	minLatency = 1                // µs
	maxLatency = 60 * 1000 * 1000 // µs
	sliceEvery = 250 * time.Millisecond
)

type recorder struct {
	mu    sync.Mutex
	all   *hdrhistogram.Histogram
	slice *hdrhistogram.Histogram
	codes map[string]int64
	n     int64
}

func newRecorder() *recorder {
	return &recorder{all: hdrhistogram.New(minLatency, maxLatency, 3), slice: hdrhistogram.New(minLatency, maxLatency, 3), codes: map[string]int64{}}
}

func (r *recorder) record(d time.Duration, code string) {
	us := d.Microseconds()
	if us < minLatency {
		us = minLatency
	}
	r.mu.Lock()
	r.all.RecordValue(us)
	r.slice.RecordValue(us)
	r.codes[code]++
	r.n++
	r.mu.Unlock()
}

// takeSlice returns and resets the current timeline slice.
func (r *recorder) takeSlice() (n int64, p99 float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, p99 = r.slice.TotalCount(), float64(r.slice.ValueAtQuantile(99))/1000
	r.slice.Reset()
	return n, p99
}

// Run drives op as load describes and returns what it measured.
func Run(ctx context.Context, load Load, op Op) Result {
	return RunRounds(ctx, 1, []Load{load}, []Op{op})[0]
}

// RunRounds drives several loads in turns: in each of rounds rounds every
// load runs its share of requests (or of its duration), one load after
// another. A slow spell of a shared machine then falls on all of them alike,
// so the ratios between them hold. Each result covers all of its load's
// rounds; request numbers run on across rounds.
func RunRounds(ctx context.Context, rounds int, loads []Load, ops []Op) []Result {
	rounds = max(rounds, 1)
	runs := make([]*loadRun, len(loads))
	for i, l := range loads {
		runs[i] = newLoadRun(l)
	}
	for k := 0; k < rounds; k++ {
		for i, lr := range runs {
			lr.round(ctx, ops[i], k, rounds)
		}
	}
	out := make([]Result, len(runs))
	for i, lr := range runs {
		out[i] = lr.result()
	}
	return out
}

// profileTurn starts the CPU profile of round k of the load called name in
// dir; stop ends it.
func profileTurn(dir, name string, k int) (stop func(), err error) {
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, name)
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", slug, k+1)))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// loadRun is one load's measurements across its rounds.
type loadRun struct {
	load     Load
	rec      *recorder
	issued   int64         // requests issued in earlier rounds
	elapsed  time.Duration // time spent in earlier rounds
	timeline []Point
}

func newLoadRun(load Load) *loadRun {
	load.Concurrency = max(load.Concurrency, 1)
	if load.Requests <= 0 && load.Duration <= 0 {
		load.Requests = 1000
	}
	return &loadRun{load: load, rec: newRecorder()}
}

// round runs round k of rounds: requests [k·n/rounds, (k+1)·n/rounds), or a
// rounds-th of the duration.
func (lr *loadRun) round(ctx context.Context, op Op, k, rounds int) {
	if lr.load.Turn != nil {
		lr.load.Turn(func() { lr.turn(ctx, op, k, rounds) })
		return
	}
	lr.turn(ctx, op, k, rounds)
}

func (lr *loadRun) turn(ctx context.Context, op Op, k, rounds int) {
	load := lr.load
	if load.ProfileDir != "" {
		if stop, err := profileTurn(load.ProfileDir, load.Name, k); err != nil {
			fmt.Fprintf(os.Stderr, "bench: no profile of %s's round %d: %v\n", load.Name, k+1, err)
		} else {
			defer stop()
		}
	}
	limit := int64(0) // request numbers below limit belong to this round (0: no limit)
	if load.Requests > 0 {
		limit = load.Requests * int64(k+1) / int64(rounds)
	}
	if load.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, load.Duration/time.Duration(rounds))
		defer cancel()
	}
	base := lr.issued
	issued := atomic.Int64{}
	issued.Store(base)
	next := func() (int64, bool) {
		i := issued.Add(1) - 1
		return i, (limit <= 0 || i < limit) && ctx.Err() == nil
	}

	// Open loop: a pacer schedules requests at the rate and workers take them;
	// latency counts from the scheduled moment, so a stalled server cannot
	// hide its stall by slowing the generator down (coordinated omission).
	var schedule chan time.Time
	if load.Rate > 0 {
		schedule = make(chan time.Time, 1<<16)
		go func() {
			defer close(schedule)
			start := time.Now()
			interval := time.Duration(float64(time.Second) / load.Rate)
			for j := int64(0); ; j++ {
				at := start.Add(time.Duration(j) * interval)
				if limit > 0 && base+j >= limit {
					return
				}
				if d := time.Until(at); d > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(d):
					}
				} else if ctx.Err() != nil {
					return
				}
				schedule <- at
			}
		}()
	}

	start := time.Now()
	stopTimeline := make(chan struct{})
	var tlDone sync.WaitGroup
	tlDone.Add(1)
	go func() {
		defer tlDone.Done()
		t := time.NewTicker(sliceEvery)
		defer t.Stop()
		last := start
		slice := func(now time.Time) { // closes the slice since last, which the round's end may cut short
			if n, p99 := lr.rec.takeSlice(); now.After(last) {
				lr.timeline = append(lr.timeline, Point{At: (lr.elapsed + now.Sub(start)).Seconds(), Throughput: float64(n) / now.Sub(last).Seconds(), P99: p99})
			}
			last = now
		}
		for {
			select {
			case <-stopTimeline:
				slice(time.Now())
				return
			case now := <-t.C:
				slice(now)
				lr.progress(k, rounds, lr.elapsed+now.Sub(start))
			}
		}
	}()

	var wg sync.WaitGroup
	for w := 0; w < load.Concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				var began time.Time
				if schedule != nil {
					at, ok := <-schedule
					if !ok {
						return
					}
					began = at
				}
				i, ok := next()
				if !ok {
					return
				}
				if schedule == nil {
					began = time.Now()
				}
				code := op(context.WithoutCancel(ctx), w, i)
				lr.rec.record(time.Since(began), code)
			}
		}(w)
	}
	wg.Wait()
	close(stopTimeline)
	tlDone.Wait()
	lr.elapsed += time.Since(start)
	if lr.issued = limit; limit <= 0 {
		lr.issued = lr.rec.n
	}
	lr.progress(k, rounds, lr.elapsed)
	if load.Progress != nil {
		fmt.Fprintln(load.Progress)
	}
}

func (lr *loadRun) result() Result {
	h := lr.rec.all
	ms := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
	res := Result{
		Name: lr.load.Name, Mode: "closed", Concurrency: lr.load.Concurrency,
		Requests: lr.rec.n, Seconds: lr.elapsed.Seconds(), Throughput: float64(lr.rec.n) / lr.elapsed.Seconds(),
		Latency: Percentiles{P50: ms(50), P90: ms(90), P99: ms(99), P999: ms(99.9), Max: float64(h.Max()) / 1000},
		Codes:   lr.rec.codes, Timeline: lr.timeline,
	}
	if lr.load.Rate > 0 {
		res.Mode = fmt.Sprintf("open %.0f/s", lr.load.Rate)
	}
	return res
}

// progress draws a one-line bar: by requests when bounded, else by time.
func (lr *loadRun) progress(k, rounds int, spent time.Duration) {
	load := lr.load
	if load.Progress == nil {
		return
	}
	lr.rec.mu.Lock()
	n := lr.rec.n
	lr.rec.mu.Unlock()
	frac := 0.0
	if load.Requests > 0 {
		frac = float64(n) / float64(load.Requests)
	} else if load.Duration > 0 {
		frac = spent.Seconds() / load.Duration.Seconds()
	}
	frac = min(frac, 1)
	const width = 30
	done := int(frac * width)
	rate := float64(n) / max(spent.Seconds(), 1e-9)
	name := load.Name
	if rounds > 1 {
		name = fmt.Sprintf("%s %d/%d", name, k+1, rounds)
	}
	fmt.Fprintf(load.Progress, "\r%-28s [%s%s] %3.0f%% %9d req %9.0f/s", name, strings.Repeat("=", done), strings.Repeat(" ", width-done), frac*100, n, rate)
}

// SortedCodes lists a result's codes by count, largest first.
func (r Result) SortedCodes() []string {
	codes := make([]string, 0, len(r.Codes))
	for c := range r.Codes {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool {
		return r.Codes[codes[i]] > r.Codes[codes[j]] || (r.Codes[codes[i]] == r.Codes[codes[j]] && codes[i] < codes[j])
	})
	return codes
}
