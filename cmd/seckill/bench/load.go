// Package bench drives load at seckill and reports it: closed- and open-loop
// load generation, HDR latency histograms, and reports as JSON, Markdown and
// a PNG chart. The scenarios themselves live in cmd/seckill.
package bench

import (
	"context"
	"fmt"
	"io"
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
	if load.Concurrency < 1 {
		load.Concurrency = 1
	}
	if load.Requests <= 0 && load.Duration <= 0 {
		load.Requests = 1000
	}
	if load.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, load.Duration)
		defer cancel()
	}
	rec := newRecorder()
	var issued atomic.Int64
	next := func() (int64, bool) {
		i := issued.Add(1) - 1
		return i, (load.Requests <= 0 || i < load.Requests) && ctx.Err() == nil
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
			for k := int64(0); ; k++ {
				at := start.Add(time.Duration(k) * interval)
				if load.Requests > 0 && k >= load.Requests {
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
	var timeline []Point
	var tlDone sync.WaitGroup
	tlDone.Add(1)
	go func() {
		defer tlDone.Done()
		t := time.NewTicker(sliceEvery)
		defer t.Stop()
		for {
			select {
			case <-stopTimeline:
				return
			case now := <-t.C:
				n, p99 := rec.takeSlice()
				timeline = append(timeline, Point{At: now.Sub(start).Seconds(), Throughput: float64(n) / sliceEvery.Seconds(), P99: p99})
				progress(load, rec, start)
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
				rec.record(time.Since(began), code)
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopTimeline)
	tlDone.Wait()
	progress(load, rec, start)
	if load.Progress != nil {
		fmt.Fprintln(load.Progress)
	}

	h := rec.all
	ms := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
	res := Result{
		Name: load.Name, Mode: "closed", Concurrency: load.Concurrency,
		Requests: rec.n, Seconds: elapsed.Seconds(), Throughput: float64(rec.n) / elapsed.Seconds(),
		Latency: Percentiles{P50: ms(50), P90: ms(90), P99: ms(99), P999: ms(99.9), Max: float64(h.Max()) / 1000},
		Codes:   rec.codes, Timeline: timeline,
	}
	if load.Rate > 0 {
		res.Mode = fmt.Sprintf("open %.0f/s", load.Rate)
	}
	return res
}

// progress draws a one-line bar: by requests when bounded, else by time.
func progress(load Load, rec *recorder, start time.Time) {
	if load.Progress == nil {
		return
	}
	rec.mu.Lock()
	n := rec.n
	rec.mu.Unlock()
	frac := 0.0
	if load.Requests > 0 {
		frac = float64(n) / float64(load.Requests)
	} else if load.Duration > 0 {
		frac = time.Since(start).Seconds() / load.Duration.Seconds()
	}
	frac = min(frac, 1)
	const width = 30
	done := int(frac * width)
	rate := float64(n) / max(time.Since(start).Seconds(), 1e-9)
	fmt.Fprintf(load.Progress, "\r%-22s [%s%s] %3.0f%% %9d req %9.0f/s", load.Name, strings.Repeat("=", done), strings.Repeat(" ", width-done), frac*100, n, rate)
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
