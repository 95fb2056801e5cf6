package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/seckill/seckill/tasks"
)

// Linearizability of one goods' sale: shoppers grab, cancel what they won
// and read the stock left, all at once over the real HTTP API, and now and
// then every unpaid order expires on the injected clock. The history
// (each request's call and return times and its answer) is checked with
// porcupine against the sale as one shopper at a time would see it: the
// stock never goes below zero, a grab is refused sold_out only when
// nothing is left and limit_reached only at the limit, a cancel or an
// expiry gives its unit back, and a read says what is left.
//
// The history is bounded (linClients × linOps operations) so that the
// check ends in well under a second; CheckOperationsTimeout bounds it
// anyway: a check that runs out of time is reported as unknown, never as
// a pass.

const (
	linClients  = 5  // shoppers, each its own client
	linOps      = 24 // operations a shopper sends
	linStock    = 4  // the goods' stock, less than the shoppers could hold
	linLimit    = 2  // a shopper's limit
	linExpiries = 2  // times every unpaid order is expired, mid-history
	linTimeout  = 60 * time.Second
)

// linInput is one operation as sent.
type linInput struct {
	Op     string // "grab", "cancel", "read", "expire"
	Client int
}

// linOutput is its answer: the code ("ok", "sold_out", "limit_reached")
// or, for a read, the stock left.
type linOutput struct {
	Code      string
	Remaining int64
}

// linState is the sale as the model has it: units left and units each
// shopper holds (every one unpaid: nobody pays here).
type linState struct {
	Left int64
	Held [linClients]int64
}

var linModel = porcupine.Model{
	Init: func() any { return linState{Left: linStock} },
	Step: func(st, in, out any) (bool, any) {
		s, i, o := st.(linState), in.(linInput), out.(linOutput)
		switch i.Op {
		case "grab":
			switch {
			case s.Held[i.Client] >= linLimit:
				return o.Code == "limit_reached", s
			case s.Left == 0:
				return o.Code == "sold_out", s
			}
			s.Left--
			s.Held[i.Client]++
			return o.Code == "ok", s
		case "cancel": // of an order the shopper holds: always a success
			if s.Held[i.Client] == 0 || o.Code != "ok" {
				return false, s
			}
			s.Left++
			s.Held[i.Client]--
			return true, s
		case "read":
			return o.Remaining == s.Left, s
		case "expire": // every unpaid order, with nothing else in flight
			for c := range s.Held {
				s.Left += s.Held[c]
				s.Held[c] = 0
			}
			return o.Code == "ok", s
		}
		return false, s
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(linInput), out.(linOutput)
		if i.Op == "read" {
			return fmt.Sprintf("shopper#%d read → %d left", i.Client, o.Remaining)
		}
		return fmt.Sprintf("shopper#%d %s → %s", i.Client, i.Op, o.Code)
	},
	DescribeState: func(st any) string {
		s := st.(linState)
		return fmt.Sprintf("%d left, held %v", s.Left, s.Held)
	},
}

func TestGrabsLinearizable(t *testing.T) {
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			linearizable(t, shards)
		})
	}
}

// linearizable records and checks one history on goods of shards buckets.
func linearizable(t *testing.T, shards int) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, -time.Minute, 7*24*time.Hour) // open past every expiry's move of the clock
	var created struct{ Goods goodsJSON }
	if st := a.call("POST", "/api/admin/goods", mt, map[string]any{"slot_id": sl.ID, "title": "Linearizable", "price_cents": 10000,
		"seckill_price_cents": 2500, "stock": linStock, "limit_per_user": linLimit, "shards": shards}, &created); st != 201 {
		t.Fatalf("create goods: %d", st)
	}
	g := created.Goods
	tokens := make([]string, linClients)
	for i := range tokens {
		tokens[i], _ = a.newUser()
	}
	client := &http.Client{Timeout: modelWait}
	start := time.Now()
	since := func() int64 { return int64(time.Since(start)) } // monotonic

	var (
		mu      sync.Mutex
		history []porcupine.Operation
		held    = make([][]int64, linClients) // each shopper's unpaid orders, as they know them
		gate    sync.RWMutex                  // an expiry runs with nothing else in flight
		wg      sync.WaitGroup
	)
	record := func(c int, in linInput, call int64, out linOutput) {
		mu.Lock()
		history = append(history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: since()})
		mu.Unlock()
	}
	fail := make(chan string, linClients+1)
	for c := range linClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(c), uint64(start.UnixNano())))
			for n := range linOps {
				gate.RLock()
				in := linInput{Op: "grab", Client: c}
				switch r := rnd.IntN(10); {
				case r < 3 && len(held[c]) > 0:
					in.Op = "cancel"
				case r < 5:
					in.Op = "read"
				}
				call := since()
				var out linOutput
				switch in.Op {
				case "grab":
					ans := grabOnce(client, fmt.Sprintf("%s/api/goods/%d/grab", a.URL, g.ID), tokens[c], fmt.Sprintf("lin-%d-%d", c, n))
					switch {
					case ans.status == http.StatusCreated:
						out.Code = "ok"
						held[c] = append(held[c], ans.order)
					case ans.status == http.StatusConflict && (ans.code == "sold_out" || ans.code == "limit_reached"):
						out.Code = ans.code
					default:
						fail <- fmt.Sprintf("shopper#%d's grab: %d %s %s", c, ans.status, ans.code, ans.body)
						gate.RUnlock()
						return
					}
				case "cancel":
					k := rnd.IntN(len(held[c]))
					id := held[c][k]
					if st, body := linSend(client, "POST", fmt.Sprintf("%s/api/orders/%d/cancel", a.URL, id), tokens[c], nil); st != http.StatusOK {
						fail <- fmt.Sprintf("shopper#%d's cancel of order %d: %d %s", c, id, st, body)
						gate.RUnlock()
						return
					}
					out.Code = "ok"
					held[c] = append(held[c][:k], held[c][k+1:]...)
				case "read":
					var got struct{ Goods goodsJSON }
					if st, body := linSend(client, "GET", fmt.Sprintf("%s/api/goods/%d", a.URL, g.ID), "", &got); st != http.StatusOK {
						fail <- fmt.Sprintf("shopper#%d's read: %d %s", c, st, body)
						gate.RUnlock()
						return
					}
					out.Remaining = got.Goods.Remaining
				}
				record(c, in, call, out)
				gate.RUnlock()
			}
		}()
	}
	// The expiries: the clock passes every deadline while no request is in
	// flight, and each order the shoppers hold reads expired, with no
	// expiry tick still at work, before the shoppers go on.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for e := range linExpiries {
		select {
		case <-done:
		case <-time.After(time.Duration(200*(e+1)) * time.Millisecond):
		}
		gate.Lock()
		call := since()
		a.Clock.Advance(a.Config.OrderTTL + time.Second)
		for c := range linClients {
			for _, id := range held[c] {
				eventually(t, modelWait, fmt.Sprintf("order %d to expire", id), func() bool {
					var o struct{ Order orderJSON }
					return a.call("GET", fmt.Sprintf("/api/orders/%d", id), tokens[c], nil, &o) == 200 && o.Order.Status == "expired"
				})
			}
			held[c] = nil
		}
		eventually(t, modelWait, "no expiry tick at work", func() bool {
			active, err := a.Inspector.ListActiveTasks(tasks.QueueOrderExpire)
			if err != nil {
				return false
			}
			for _, ti := range active {
				if ti.Type == tasks.TypeOrderExpireDue {
					return false
				}
			}
			return true
		})
		record(linClients, linInput{Op: "expire", Client: linClients}, call, linOutput{Code: "ok"})
		gate.Unlock()
	}
	<-done
	close(fail)
	var problems []string
	for f := range fail {
		problems = append(problems, f)
	}
	if len(problems) > 0 {
		t.Fatalf("answers off the sale's contract:\n%s", strings.Join(problems, "\n"))
	}

	began := time.Now()
	res, info := porcupine.CheckOperationsVerbose(linModel, history, linTimeout)
	t.Logf("%d operations checked in %s: %s", len(history), time.Since(began).Round(time.Millisecond), res)
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Skipf("linearizability UNKNOWN, not a pass: the check of %d operations ran out of its %s", len(history), linTimeout)
	default:
		file := filepath.Join(os.TempDir(), fmt.Sprintf("seckill-linearizability-%d.html", time.Now().UnixNano()))
		if err := porcupine.VisualizePath(linModel, info, file); err != nil {
			t.Logf("visualize: %v", err)
		}
		t.Fatalf("the history of %d grabs, cancels, reads and expiries is not linearizable; the longest linearizable prefix, drawn: %s", len(history), file)
	}
}

// linSend sends one request from a shopper's goroutine and decodes a 200's
// JSON into out: its status and body, status 0 when it could not be sent.
func linSend(client *http.Client, method, url, token string, out any) (int, string) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return 0, fmt.Sprintf("%q: %v", raw, err)
		}
	}
	return res.StatusCode, string(raw)
}
