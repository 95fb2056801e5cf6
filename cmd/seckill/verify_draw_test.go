package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/seckill/seckill/db/fair/beacontest"
	"github.com/seckill/seckill/db/fair/verify"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/tasks"
)

// A raffle drawn with a beacon, checked by `seckill verify-draw` from the
// public answers alone: the entries root is published at the close (each
// entry's proof reaching it), the draw waits for the beacon round, and
// the command agrees with the real server; a copy of the answer with one
// entrant added does not verify, nor does one whose beacon is not the
// beacon's, nor a check without the beacon.
func TestVerifyDraw(t *testing.T) {
	b := beacontest.New(t, time.Now().Add(-time.Hour), 3*time.Second)
	a := startApp(t, func(c *Config) { c.RaffleBeaconURL = b.URL })
	_, g := a.raffleGoods(2, 10*time.Minute)
	var shoppers []string
	for range 5 {
		tok, _ := a.newUser()
		a.enterRaffle(tok, g.ID, 201)
		shoppers = append(shoppers, tok)
	}
	var before drawAnswer
	a.call("GET", fmt.Sprintf("/api/goods/%d/draw", g.ID), "", nil, &before)
	if before.Status != "open" || before.BeaconRound == nil || before.Beacon != nil || before.EntriesRoot != "" {
		t.Fatalf("before the close: %+v, want open with a beacon round named", before)
	}
	round := *before.BeaconRound
	if want := (before.DrawAt.Unix()-b.Genesis)/b.Period + 2; round != want {
		t.Fatalf("beacon round %d, want %d: the first after the close", round, want)
	}

	// Past the close and the round's time: the draw waits for the round.
	a.advance(10*time.Minute + 2*time.Duration(b.Period)*time.Second)
	var closed drawAnswer
	eventually(t, 10*time.Second, "the draw says it waits for the beacon", func() bool {
		a.call("GET", fmt.Sprintf("/api/goods/%d/draw", g.ID), "", nil, &closed)
		return closed.Status == "waiting_beacon" && b.Fetched(round) > 0
	})
	if closed.EntriesRoot == "" || closed.Seed != "" {
		t.Fatalf("closed: %+v, want the entries root and no seed", closed)
	}
	for _, tok := range shoppers {
		var out struct {
			Entry struct {
				Leaf  string            `json:"leaf"`
				Proof []model.ProofStep `json:"proof"`
			}
		}
		if st := a.call("GET", fmt.Sprintf("/api/goods/%d/entries/me", g.ID), tok, nil, &out); st != 200 ||
			!verify.VerifyProof(out.Entry.Leaf, out.Entry.Proof, closed.EntriesRoot) {
			t.Fatalf("an entry's proof %+v (status %d) does not reach %s", out.Entry, st, closed.EntriesRoot)
		}
	}
	// The draw task, run while the round is not out, enqueues itself again.
	if drawn, err := a.Fair.DrawRaffle(context.Background(), g.ID); err != nil || drawn {
		t.Fatalf("the draw task before the round is out: %v %v, want a wait", drawn, err)
	}
	if !drawTaskAgain(t, a, g.ID) {
		t.Fatal("the draw task waiting for the beacon did not enqueue itself again")
	}
	b.Publish(round)
	var d drawAnswer
	eventually(t, 20*time.Second, "the worker draws once the round is out", func() bool {
		a.call("GET", fmt.Sprintf("/api/goods/%d/draw", g.ID), "", nil, &d)
		return d.Status == "drawn"
	})
	if d.Beacon == nil || *d.Beacon != beacontest.Randomness(round) || d.EntriesRoot != closed.EntriesRoot || len(d.Order) != 5 {
		t.Fatalf("drawn: %+v", d)
	}

	id := strconv.FormatInt(g.ID, 10)
	ctx := context.Background()
	var out bytes.Buffer
	if err := runVerifyDraw(ctx, []string{"-beacon", b.URL, a.URL, id}, &out); err != nil || !strings.Contains(out.String(), "draw verified") {
		t.Fatalf("verify-draw of the real draw: %v\n%s", err, out.String())
	}
	t.Setenv("RAFFLE_BEACON_URL", b.URL) // the beacon from the environment
	out.Reset()
	if err := runVerifyDraw(ctx, []string{a.URL, id}, &out); err != nil {
		t.Fatalf("verify-draw with RAFFLE_BEACON_URL: %v\n%s", err, out.String())
	}

	// Doctored copies of the public answer.
	for _, c := range []struct {
		name, want string
		doctor     func(map[string]any)
	}{
		{"one entrant added", "entries_root", func(m map[string]any) {
			m["order"] = append(m["order"].([]any), 999999)
			m["entries"] = m["entries"].(float64) + 1
		}},
		{"another beacon", "beacon round", func(m map[string]any) { m["beacon"] = beacontest.Randomness(round + 1) }},
	} {
		proxy := doctoredDraw(t, a.URL, c.doctor)
		out.Reset()
		err := runVerifyDraw(ctx, []string{"-beacon", b.URL, proxy, id}, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(out.String(), "draw verified") {
			t.Fatalf("%s: verify-draw says %v\n%s\nwant it to differ on %s", c.name, err, out.String(), c.want)
		}
	}
	t.Setenv("RAFFLE_BEACON_URL", "")
	if err := runVerifyDraw(ctx, []string{a.URL, id}, io.Discard); err == nil || !strings.Contains(err.Error(), "-beacon") {
		t.Fatalf("verify-draw without the beacon: %v, want it to ask for one", err)
	}
}

// drawTaskAgain reports whether a raffle:draw task of the goods enqueued
// again (its ID ":again:") is in the critical queue, in any state.
func drawTaskAgain(t *testing.T, a *testApp, goodsID int64) bool {
	t.Helper()
	prefix := fmt.Sprintf("raffle:draw:%d:", goodsID)
	for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
		a.Inspector.ListScheduledTasks, a.Inspector.ListPendingTasks, a.Inspector.ListActiveTasks, a.Inspector.ListCompletedTasks,
	} {
		infos, err := list(tasks.QueueCritical)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range infos {
			if strings.HasPrefix(info.ID, prefix) && strings.Contains(info.ID, ":again:") {
				return true
			}
		}
	}
	return false
}

// doctoredDraw serves the app's public answers through doctor, which
// rewrites the draw's; it returns the copy's base URL.
func doctoredDraw(t *testing.T, base string, doctor func(map[string]any)) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, err := http.Get(base + r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if strings.HasSuffix(r.URL.Path, "/draw") {
			doctor(m)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(res.StatusCode)
		json.NewEncoder(w).Encode(m)
	}))
	t.Cleanup(s.Close)
	return s.URL
}
