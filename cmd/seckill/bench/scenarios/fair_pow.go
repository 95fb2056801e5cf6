package scenarios

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
)

// The fleet against a proof of work (issue 22: "with proof of work on, the
// fleet's requests a second fall by at least 10× at the same CPU"). The
// whole fleet hammers a first-come sale for a while, once on goods without
// a proof of work and once on goods with pow_bits, solving each challenge
// in Go as a bot would (goods.SolvePow). Every part runs on this machine
// (server, Redis, the fleet), so the CPU the fleet spends solving is CPU
// the machine has; the measure is the fleet's grabs per second of machine
// CPU (this process's CPU, plus the Redis server's when it is a real one).

// errRemoteTarget stands for the CPU of a server the bench does not run.
var errRemoteTarget = errors.New("the server is remote")

// powPhase is one run of the fleet.
type powPhase struct {
	bits       int   // the merchant's pow_bits
	maxBits    int   // the most a challenge asked (the server raises the bits under attack)
	grabs      int64 // grab requests
	challenges int64 // challenge requests (GET /api/pow)
	codes      map[string]int64
	seconds    float64
	procUS     float64 // this process's CPU: server, worker, the fleet (and the embedded Redis)
	redisUS    float64 // the Redis server's CPU (a real Redis only)
	redisErr   error
}

// cpuSeconds is the machine CPU the phase used, in seconds.
func (p *powPhase) cpuSeconds() float64 { return (p.procUS + p.redisUS) / 1e6 }

// requests is every request the fleet made: grabs and challenges.
func (p *powPhase) requests() int64 { return p.grabs + p.challenges }

// perCPU is the fleet's requests per second of machine CPU.
func (p *powPhase) perCPU() float64 { return float64(p.requests()) / max(p.cpuSeconds(), 1e-9) }

// rate is the fleet's requests a second.
func (p *powPhase) rate() float64 { return float64(p.requests()) / max(p.seconds, 1e-9) }

// grabRate is the fleet's grabs a second.
func (p *powPhase) grabRate() float64 { return float64(p.grabs) / max(p.seconds, 1e-9) }

// powResult is the fleet without and with a proof of work.
type powResult struct {
	without, with powPhase
}

// powPhases runs the fleet without and then with the proof of work.
func (f *fairBench) powPhases(ctx context.Context) (*powResult, error) {
	res := &powResult{}
	for _, p := range []*powPhase{&res.without, &res.with} {
		if p == &res.with {
			p.bits = f.cfg.PowBits
		}
		// The sale before emptied the bots' addresses' RATE_IP buckets;
		// a second refills them, so each phase starts alike.
		time.Sleep(1100 * time.Millisecond)
		if err := f.powPhase(ctx, p); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// powPhase sets up a live first-come sale with the phase's bits and lets
// every bot account fire at it for PowFor, measuring rate and CPU.
func (f *fairBench) powPhase(ctx context.Context, p *powPhase) error {
	s := FairSale{Label: fmt.Sprintf("fleet, pow_bits %d", p.bits), Mode: "first_come"}
	g, err := f.fixture(s, fairTimes{start: time.Now().Add(-time.Minute)}, f.cfg.Stock, p.bits)
	if err != nil {
		return err
	}
	id := g.Goods.ID
	grab := fmt.Sprintf("/api/goods/%d/grab", id)
	p.codes = map[string]int64{}
	var mu sync.Mutex
	ctx, cancel := context.WithTimeout(ctx, f.cfg.PowFor)
	defer cancel()

	var redis0 redisStats
	redisErr := errRemoteTarget
	if f.t.Goods != nil {
		redis0, redisErr = f.t.readRedisStats(ctx)
	}
	proc0, began := processCPU(), time.Now()
	var wg sync.WaitGroup
	for w := f.cfg.Humans; w < len(f.shoppers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				var h []string
				if p.bits > 0 { // a refused challenge is asked again at once; a grab goes only with a proof
					code := ""
					h = f.proof(w, id, func(c string, _ time.Duration, bits int) {
						code = c
						mu.Lock()
						p.challenges++
						p.codes["challenge "+c]++
						p.maxBits = max(p.maxBits, bits)
						mu.Unlock()
					})
					if code != "ok" {
						continue
					}
				}
				code, _ := f.call(w, "POST", grab, h, nil)
				mu.Lock()
				p.grabs++
				p.codes[code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait() // a bot in the middle of a solve finishes it: its CPU and time count
	p.seconds, p.procUS = time.Since(began).Seconds(), processCPU()-proc0
	if redisErr == nil {
		redis1, err := f.t.readRedisStats(context.WithoutCancel(ctx))
		if redisErr = err; err == nil {
			p.redisUS = redis1.minus(redis0).cpuUS
		}
	}
	p.redisErr = redisErr
	return nil
}

// FairPowMeasure names the ratio in the report's measures.
const FairPowMeasure = "fair: the fleet's requests per CPU-second, without ÷ with proof of work"

// report adds the fleet's table and the ratio to r.
func (pr *powResult) report(r *bench.Report) {
	tab := bench.Table{
		Title:  "The fleet with and without a proof of work (every bot account firing at a live first-come sale)",
		Header: []string{"goods", "grabs", "challenges", "requests/s (grabs/s)", "machine CPU s (cores busy)", "requests per CPU-second", "answers"},
	}
	redisNote := ""
	for _, p := range []*powPhase{&pr.without, &pr.with} {
		label := "pow_bits 0 (off)"
		if p.bits > 0 {
			label = fmt.Sprintf("pow_bits %d (challenges asked up to %d)", p.bits, p.maxBits)
		}
		tab.Rows = append(tab.Rows, []string{label, fmt.Sprint(p.grabs), fmt.Sprint(p.challenges), fmt.Sprintf("%.0f (%.0f)", p.rate(), p.grabRate()),
			fmt.Sprintf("%.2f (%.2f)", p.cpuSeconds(), p.cpuSeconds()/max(p.seconds, 1e-9)), fmt.Sprintf("%.0f", p.perCPU()), codeList(p.codes)})
		switch {
		case errors.Is(p.redisErr, errRemoteTarget):
			redisNote = "Machine CPU is only this process's, the fleet's: the server is remote (-url), so the ratio is not at the same CPU."
		case p.redisErr != nil:
			redisNote = "Machine CPU is this process's (server, worker, the fleet; the embedded Redis runs in it too); the Redis server's own is " + notMeasured(p.redisErr) + "."
		}
	}
	if redisNote == "" {
		redisNote = "Machine CPU is this process's (server, worker, the fleet) plus the Redis server's (INFO cpu)."
	}
	ratio := pr.without.perCPU() / max(pr.with.perCPU(), 1e-9)
	verdict := "met"
	switch {
	case errors.Is(pr.with.redisErr, errRemoteTarget):
		verdict = "not judged against a remote server"
	case ratio < 10:
		verdict = "**not met**"
	}
	tab.Notes = append(tab.Notes, redisNote, fmt.Sprintf("The fleet's requests (grabs and challenges) per CPU-second fell %.1f× with the proof of work (requests a second %.1f×, grabs a second %.1f×); target ≥ 10×: %s.",
		ratio, pr.without.rate()/max(pr.with.rate(), 1e-9), pr.without.grabRate()/max(pr.with.grabRate(), 1e-9), verdict))
	r.Tables = append(r.Tables, tab)
	r.Extra[FairPowMeasure] = fmt.Sprintf("%.1f× (%.0f ÷ %.0f; requests a second %.0f ÷ %.0f; pow_bits %d)",
		ratio, pr.without.perCPU(), pr.with.perCPU(), pr.without.rate(), pr.with.rate(), pr.with.bits)
}
