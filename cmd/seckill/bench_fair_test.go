package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/seckill/seckill/cmd/seckill/bench/scenarios"
	"github.com/seckill/seckill/db/dbtest"
)

// The fair scenario at a tiny size against an in-process server: every
// sale the server runs is measured and its units add up (bots' + humans' =
// sold ≤ stock, read from each account's orders); a mode the server does
// not have says so instead of failing; the fleet's proof-of-work phases
// both fire and the one with a proof fetches challenges. No timing is asserted.
func TestBenchFair(t *testing.T) {
	o, err := scenarios.ParseOptions([]string{"-smoke", "-scenarios", "fair", "-idle-ws", "0"})
	if err != nil {
		t.Fatal(err)
	}
	o.RedisURL, o.DatabaseURL = dbtest.RedisURL(t), dbtest.DatabaseURL(t)
	o.Progress = nil
	o.Fair.ModePow = 4 // humans and bots solve the sales' proof of work too
	r, err := benchRun(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + r.Markdown())
	if len(r.Tables) != 3 {
		t.Fatalf("%d tables, want the sale's, the fleet's and the outflow's", len(r.Tables))
	}
	if out := r.Tables[2]; len(out.Rows) < 3 {
		t.Errorf("outflow: %d rows, want the admissions over time", len(out.Rows))
	}
	sales, fleet := r.Tables[0], r.Tables[1]
	if len(sales.Rows) != len(scenarios.FairSales) {
		t.Fatalf("%d sale rows, want %d", len(sales.Rows), len(scenarios.FairSales))
	}
	checks := map[string]bool{}
	for _, c := range r.Checks {
		checks[c.Name] = c.OK
		if !c.OK {
			t.Errorf("invariant %s violated: %s", c.Name, c.Detail)
		}
	}
	for i, row := range sales.Rows {
		label := scenarios.FairSales[i].Label
		if row[0] != label {
			t.Errorf("row %d is %q, want %q", i, row[0], label)
		}
		if strings.HasPrefix(row[1], "not available on this server") {
			t.Errorf("%s not measured: %s", label, row[1])
			continue
		}
		if _, ok := checks["fair "+label+": units won add up"]; !ok {
			t.Errorf("%s: no check that the units add up", label)
		}
		sold, stock, ok := strings.Cut(row[1], " / ")
		n, err1 := strconv.Atoi(sold)
		s, err2 := strconv.Atoi(stock)
		if !ok || err1 != nil || err2 != nil || n > s || s != o.Fair.Stock {
			t.Errorf("%s: units sold %q, want n / %d with n ≤ stock", label, row[1], o.Fair.Stock)
		}
		if scenarios.FairSales[i].Mode == "first_come" && n == 0 {
			t.Errorf("first_come sold nothing: %v", row)
		}
		for col, cell := range row[2:9] {
			if cell == "" || strings.Contains(cell, "NaN") || strings.Contains(cell, "Inf") {
				t.Errorf("%s: column %q is %q", label, sales.Header[col+2], cell)
			}
		}
	}
	if len(fleet.Rows) != 2 {
		t.Fatalf("fleet rows: %v", fleet.Rows)
	}
	for i, row := range fleet.Rows {
		grabs, _ := strconv.Atoi(row[1])
		challenges, _ := strconv.Atoi(row[2])
		if grabs == 0 {
			t.Errorf("fleet phase %d made no grabs: %v", i, row)
		}
		if (i == 1) != (challenges > 0) {
			t.Errorf("fleet phase %d fetched %d challenges: %v", i, challenges, row)
		}
	}
	if v := r.Extra[scenarios.FairPowMeasure]; v == "" || strings.Contains(v, "NaN") || strings.Contains(v, "Inf") {
		t.Errorf("pow ratio: %q", v)
	}
}
