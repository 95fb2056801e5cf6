package scenarios

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
)

// After each fair sale: the units counted per account, and the table.

// sold is the goods' units held by orders, by Redis's live counts.
func (f *fairBench) sold(id int64) (int64, error) {
	var st struct {
		Unpaid int64 `json:"unpaid"`
		Paid   int64 `json:"paid"`
	}
	if err := f.t.mustCall("GET", fmt.Sprintf("/api/admin/goods/%d/stats", id), f.t.admin, nil, &st); err != nil {
		return 0, err
	}
	return st.Unpaid + st.Paid, nil
}

// count reads every account's orders (GET /api/me/orders) and counts those
// of the sale's goods that hold a unit, for bots and humans apart.
func (f *fairBench) count(ctx context.Context, res *fairResult) error {
	sold, err := f.sold(res.goodsID)
	if err != nil {
		return err
	}
	res.sold = sold
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for c := 0; c < fairCounters; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := len(f.shoppers) + c
			for {
				w := int(next.Add(1) - 1)
				if w >= len(f.shoppers) || ctx.Err() != nil {
					return
				}
				var mine struct {
					Orders []struct {
						GoodsID int64  `json:"goods_id"`
						Status  string `json:"status"`
					} `json:"orders"`
				}
				code := ""
				for try := 0; try < 50; try++ {
					if code, _ = f.callAs(conn, w, "GET", "/api/me/orders", nil, &mine); code != "rate_limited" {
						break
					}
					time.Sleep(100 * time.Millisecond) // the bot's address spent its second
				}
				if code != "ok" {
					atomic.AddInt64(&res.countFailures, 1)
					continue
				}
				held := int64(0)
				for _, o := range mine.Orders {
					if o.GoodsID == res.goodsID && (o.Status == "unpaid" || o.Status == "paid") {
						held++
					}
				}
				switch {
				case f.shoppers[w].bot:
					atomic.AddInt64(&res.botUnits, held)
				case held > 0:
					atomic.AddInt64(&res.humanUnits, held)
					atomic.AddInt64(&res.humansWon, 1)
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// p99 of durations, in ms.
func p99ms(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[min(len(s)-1, int(math.Ceil(0.99*float64(len(s))))-1)].Microseconds()) / 1000
}

// fairTolerance is the target's band around the bots' fair share, in
// percentage points of the units.
const fairTolerance = 10.0

// report adds the sale's table, the proof-of-work table and the invariants to r.
func (f *fairBench) report(r *bench.Report, results []*fairResult, pow *powResult, load0, load1 string) {
	cfg := f.cfg
	accounts := cfg.Bots * cfg.Accounts
	fair := 100 * float64(accounts) / float64(accounts+cfg.Humans)
	tab := bench.Table{
		Title: fmt.Sprintf("Fair sale: %d humans, %d bots × %d accounts (fair share of the bots' accounts %.0f%%), %d units a sale, limit 1",
			cfg.Humans, cfg.Bots, cfg.Accounts, fair, cfg.Stock),
		Header: []string{"mode", "units sold", "bots' units", "bots' share", "÷ fair share", "humans' chance", "humans' p99 ms", "humans' requests", "bots' requests", "target (bots within ±10 points of fair)"},
	}
	for _, res := range results {
		if res.unavailable != "" {
			tab.Rows = append(tab.Rows, []string{res.sale.Label, res.unavailable, "", "", "", "", "", "", "", ""})
			continue
		}
		share := 0.0
		if res.sold > 0 {
			share = 100 * float64(res.botUnits) / float64(res.sold)
		}
		target := "baseline"
		if res.sale.Mode != "first_come" {
			target = "met"
			if math.Abs(share-fair) > fairTolerance || res.sold == 0 {
				target = "**not met**"
			}
		}
		tab.Rows = append(tab.Rows, []string{res.sale.Label, fmt.Sprintf("%d / %d", res.sold, res.stock), strconv.FormatInt(res.botUnits, 10),
			fmt.Sprintf("%.1f%%", share), fmt.Sprintf("%.2f×", share/fair), fmt.Sprintf("%.1f%% (%d of %d)", 100*float64(res.humansWon)/float64(cfg.Humans), res.humansWon, cfg.Humans),
			fmt.Sprintf("%.1f", p99ms(res.humanLat)), strconv.Itoa(len(res.humanLat)), strconv.FormatInt(res.botRequests, 10), target})
		draw := ""
		if res.sale.Mode == "raffle" {
			draw = fmt.Sprintf("; the draw had %d entries", res.entries)
		}
		if res.sale.presolve {
			draw += fmt.Sprintf("; the fleet solved %d challenges before the open (up to %d per account; each bound to its account, good once, for a minute)", res.presolved, presolveStock)
		}
		tab.Notes = append(tab.Notes, fmt.Sprintf("%s: humans' actions %s; bots' answers %s%s.", res.sale.Label, codeList(res.humanCodes), codeList(res.botCodes), draw))
		r.Checks = append(r.Checks, bench.Check{Name: "fair " + res.sale.Label + ": units won add up",
			OK:     res.countFailures == 0 && res.botUnits+res.humanUnits == res.sold && res.sold <= res.stock && res.humanUnits == res.humansWon,
			Detail: fmt.Sprintf("bots %d + humans %d = sold %d ≤ stock %d (%d accounts unread)", res.botUnits, res.humanUnits, res.sold, res.stock, res.countFailures)})
	}
	tab.Notes = append(tab.Notes, fmt.Sprintf("Load average (1 min) %s before, %s after.", load0, load1))
	r.Tables = append(r.Tables, tab)
	if pow != nil {
		pow.report(r)
	}
}

// codeList renders outcome counts, largest first.
func codeList(m map[string]int64) string {
	res := bench.Result{Codes: m}
	var parts []string
	for _, c := range res.SortedCodes() {
		parts = append(parts, fmt.Sprintf("%s %d", c, m[c]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
