package scenarios

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
)

// The sale under attack (issue 10): honest shoppers grab while, in the same
// turn, password guessers, slow-body connections and a bot hammering with
// one token all arrive. The same grabs without the attack run in the plain
// goods scenario, in turns with this one, so their p99s compare in one run.
const (
	attackGuessers   = 16
	attackSlowBodies = 1000
	UnderAttack      = "HTTP goods grab under attack"
	LimitsOff        = "HTTP goods grab, limits off"
)

// attack is what the attackers did over every turn.
type attack struct {
	mu        sync.Mutex
	bot       map[string]int64
	guesses   map[string]int64
	growthMiB float64 // the most the server's heap and stack grew in a turn
	memErr    error
}

func (a *attack) count(m map[string]int64, code string) {
	a.mu.Lock()
	m[code]++
	a.mu.Unlock()
}

// benchUnderAttack grabs goods as the plain goods scenario does, with the attack running through each turn.
func benchUnderAttack(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	id, err := t.benchGoodsFixture(ctx, "goods under attack", o.Stock)
	if err != nil {
		return nil, err
	}
	bots, err := t.Accounts.SeedUsers(ctx, fmt.Sprintf("benchbot%d_", time.Now().Unix()%100000), "bench-password", 1)
	if err != nil {
		return nil, err
	}
	botToken, victim := t.Tokens.Sign(bots[0]), t.Users[0].Username
	attackers, err := bench.NewClient(t.URL, attackGuessers+1)
	if err != nil {
		return nil, err
	}
	a := &attack{bot: map[string]int64{}, guesses: map[string]int64{}}
	slowBodies := attackSlowBodies
	if o.Smoke {
		slowBodies = 20
	}
	grabPath := fmt.Sprintf("/api/goods/%d/grab", id)
	loginBody := []byte(`{"username":"` + victim + `","password":"not-the-password"}`)

	turn := func(run func()) {
		before, err := serverMemory(t)
		if err != nil {
			a.memErr = err
		}
		slow, err := startSlowBodies(ctx, t.URL, slowBodies)
		if err != nil {
			a.memErr = err
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := 0; g < attackGuessers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				from := fmt.Sprintf("172.16.0.%d", g+1)
				for {
					select {
					case <-stop:
						return
					default:
					}
					st, raw, err := attackers.DoFrom(g, from, "POST", "/api/auth/login", "", loginBody)
					code := "transport"
					if err == nil {
						code = outcome(st, raw, nil)
					}
					a.count(a.guesses, code)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				st, raw, err := attackers.DoFrom(attackGuessers, "172.17.0.1", "POST", grabPath, botToken, nil)
				code := "transport"
				if err == nil {
					code = outcome(st, raw, nil)
				}
				a.count(a.bot, code)
			}
		}()
		run()
		if after, err := serverMemory(t); err == nil && a.memErr == nil {
			a.mu.Lock()
			a.growthMiB = max(a.growthMiB, (after-before)/(1<<20))
			a.mu.Unlock()
		}
		close(stop)
		wg.Wait()
		if slow != nil {
			slow()
		}
	}
	return &scenario{name: UnderAttack, turn: turn,
		op: func(ctx context.Context, w int, i int64) string {
			return t.loadCall(w, grabPath, i, nil)
		},
		finish: func(ctx context.Context, res bench.Result, r *bench.Report) error {
			attackers.Close()
			if a.memErr != nil {
				return a.memErr
			}
			plain := r.Result("HTTP goods grab")
			r.Extra["attack"] = fmt.Sprintf("each turn: %d password guessers, %d slow-body connections (64 KiB declared, 1 byte sent), 1 bot with one token; bot %s; guesses %s",
				attackGuessers, slowBodies, codesLine(a.bot), codesLine(a.guesses))
			r.Extra["server memory growth under attack"] = fmt.Sprintf("%+.1f MiB heap and stack at most in a turn", a.growthMiB)
			// The smoke run is too small for its timings or memory to mean
			// anything, so only a full run turns them into checks.
			if !o.Smoke {
				r.Checks = append(r.Checks, bench.Check{Name: "under attack: server memory growth ≤ 64 MiB", OK: a.growthMiB <= 64,
					Detail: fmt.Sprintf("%+.1f MiB heap and stack at most in a turn", a.growthMiB)})
			}
			if plain != nil && plain.Latency.P99 > 0 {
				ratio := res.Latency.P99 / plain.Latency.P99
				r.Extra["honest grab p99 under attack / without"] = fmt.Sprintf("%.2f (%.2f ms / %.2f ms)", ratio, res.Latency.P99, plain.Latency.P99)
				if !o.Smoke {
					r.Checks = append(r.Checks, bench.Check{Name: "under attack: honest p99 ≤ 2× without", OK: ratio <= 2,
						Detail: fmt.Sprintf("p99 %.2f ms with the attack, %.2f ms without (%.2f×)", res.Latency.P99, plain.Latency.P99, ratio)})
				}
			}
			if res.Codes["rate_limited"] > 0 {
				r.Checks = append(r.Checks, bench.Check{Name: "under attack: no honest shopper limited", OK: false,
					Detail: fmt.Sprintf("%d honest grabs refused as rate_limited", res.Codes["rate_limited"])})
			}
			return nil
		},
	}, nil
}

// benchLimitsOff grabs through a second web process of the same binary with
// every abuse limit off: the cost of the limits on the allowed path is the
// plain goods scenario's rate against this one's, in the same run.
func benchLimitsOff(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	if t.unlimited == nil {
		return nil, nil // only the in-process bench can start the twin
	}
	id, err := t.benchGoodsFixture(ctx, "goods, limits off", o.Stock)
	if err != nil {
		return nil, err
	}
	path := fmt.Sprintf("/api/goods/%d/grab", id)
	return &scenario{name: LimitsOff,
		op: func(ctx context.Context, w int, i int64) string { return t.callVia(t.unlimited, w, path, i, nil) },
	}, nil
}

func codesLine(m map[string]int64) string {
	var parts []string
	var n int64
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s %d", k, v))
		n += v
	}
	return fmt.Sprintf("%d requests (%s)", n, strings.Join(parts, ", "))
}

// startSlowBodies runs the slow-body attackers in a child process (so their
// memory is not counted as the server's) and returns a func that stops them.
func startSlowBodies(ctx context.Context, base string, n int) (func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	child := exec.CommandContext(ctx, self, "bench-slow-bodies", base, strconv.Itoa(n))
	child.Stderr = os.Stderr
	stdout, _ := child.StdoutPipe()
	if err := child.Start(); err != nil {
		return nil, err
	}
	stop := func() { child.Process.Kill(); child.Wait() }
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if !strings.HasPrefix(line, "ready") {
		stop()
		return nil, fmt.Errorf("slow bodies: %q", line)
	}
	return stop, nil
}

// slowBodies is the hidden child mode: hold n connections that each
// declare a 64 KiB JSON body and send one byte of it, dialling again when the
// server closes one, until killed.
func slowBodies(args []string) error {
	u, n, err := childArgs("bench-slow-bodies URL N", args)
	if err != nil {
		return err
	}
	var open atomic.Int64
	for i := 0; i < n; i++ {
		c, err := dialSlowBody(u.Host, i)
		if err != nil {
			return fmt.Errorf("slow body %d: %w", i, err)
		}
		open.Add(1)
		go func() {
			buf := make([]byte, 512)
			for {
				if _, err := c.Read(buf); err == nil {
					continue
				}
				c.Close() // the server gave up on it: come back
				for c, err = dialSlowBody(u.Host, i); err != nil; c, err = dialSlowBody(u.Host, i) {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	fmt.Printf("ready %d\n", open.Load())
	select {}
}

// dialSlowBody opens one connection that declares a 64 KiB login body from
// its own forwarded address and sends one byte of it.
func dialSlowBody(host string, i int) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(c, "POST /api/auth/login HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 65536\r\nX-Forwarded-For: 172.18.%d.%d\r\n\r\n{", host, i>>8&255, i&255)
	return c, err
}
