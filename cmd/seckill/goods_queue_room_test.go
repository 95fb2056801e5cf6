package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// queueRoomJSON is GET /api/goods/{id}/queue/room's answer.
type queueRoomJSON struct {
	SeedHash string `json:"seed_hash"`
	Joined   int64  `json:"joined"`
	Started  bool   `json:"started"`
	Seed     string `json:"seed"`
}

// placedTicketJSON is a ticket with its join number and place.
type placedTicketJSON struct {
	State      string `json:"state"`
	JoinNumber int64  `json:"join_number"`
	Place      int64  `json:"place"`
	Admission  string `json:"admission"`
	// AdmittedUntil is when the admission ends, as text: two answers of one admission say the same.
	AdmittedUntil string `json:"admitted_until"`
}

// The waiting room's commitment over HTTP, to anyone: its seed's hash from
// the goods' creation, the seed once the early shoppers are shuffled; and
// `seckill queue-place <seed_hash> <seed> <joined> <join number>` answers each
// shopper's ticket's place.
func TestQueueRoomCommitmentOverHTTP(t *testing.T) {
	a := startApp(t)
	_, g := a.queueGoods(5, 1, time.Minute, nil)
	roomPath := fmt.Sprintf("/api/goods/%d/queue/room", g.ID)
	var room queueRoomJSON
	if st := a.call("GET", roomPath, "", nil, &room); st != 200 || len(room.SeedHash) != 64 || room.Started || room.Seed != "" {
		t.Fatalf("the room at creation, asked by anyone: %d %+v, want the seed's hash only", st, room)
	}
	const early = 6
	var shoppers []string
	for range early {
		tok, _ := a.newUser()
		shoppers = append(shoppers, tok)
		if st, code, _ := a.joinQueue(tok, g.ID, ""); st != 201 {
			t.Fatalf("join: %d %s", st, code)
		}
	}
	a.Clock.Advance(time.Minute)
	var after queueRoomJSON
	if st := a.call("GET", roomPath, "", nil, &after); st != 200 {
		t.Fatalf("the room after the start: %d", st)
	}
	sum := sha256.Sum256([]byte(after.Seed))
	if !after.Started || after.Joined != early || hex.EncodeToString(sum[:]) != room.SeedHash {
		t.Fatalf("after the start: %+v, want started, %d joined, the seed of hash %s", after, early, room.SeedHash)
	}
	seen := map[int64]bool{}
	for i, tok := range shoppers {
		var out struct{ Ticket placedTicketJSON }
		if st := a.call("GET", fmt.Sprintf("/api/goods/%d/queue", g.ID), tok, nil, &out); st != 200 {
			t.Fatalf("ticket: %d", st)
		}
		tk := out.Ticket
		var buf bytes.Buffer
		if err := queuePlace(&buf, []string{room.SeedHash, after.Seed, strconv.FormatInt(after.Joined, 10), strconv.FormatInt(tk.JoinNumber, 10)}); err != nil {
			t.Fatal(err)
		}
		got, _ := strconv.ParseInt(strings.TrimSpace(buf.String()), 10, 64)
		if tk.JoinNumber != int64(i+1) || tk.Place < 1 || tk.Place > early || got != tk.Place || seen[tk.Place] {
			t.Fatalf("shopper %d: ticket %+v; seckill queue-place says %q", i+1, tk, buf.String())
		}
		seen[tk.Place] = true
	}
	if err := queuePlace(&bytes.Buffer{}, []string{room.SeedHash, after.Seed, "x", "1"}); err == nil {
		t.Fatal("queue-place took a count that is not a number")
	}
	// A verifier refuses what it cannot check: no hash, or a seed that is
	// not the committed one (it would compute places from it otherwise).
	other := strings.Repeat("ab", 32)
	for _, args := range [][]string{
		{after.Seed, strconv.FormatInt(after.Joined, 10), "1"},
		{room.SeedHash, other, strconv.FormatInt(after.Joined, 10), "1"},
		{"", after.Seed, strconv.FormatInt(after.Joined, 10), "1"},
	} {
		if err := queuePlace(&bytes.Buffer{}, args); err == nil {
			t.Fatalf("queue-place %q answered a place", args)
		}
	}
}

// Priority codes over HTTP: the merchant makes them (audited, the codes not
// in the entry), a shopper who joins with one is admitted at once and wins
// the grab; the code again, an unknown one, a bad count are refused.
func TestQueuePriorityCodesOverHTTP(t *testing.T) {
	a := startApp(t)
	mt, g := a.queueGoods(5, 1, time.Minute, nil)
	codesPath := fmt.Sprintf("/api/admin/goods/%d/queue/codes", g.ID)
	for _, n := range []int{0, 1001} {
		a.wantError("POST", codesPath, mt, map[string]any{"count": n}, 400, "invalid")
	}
	a.wantError("POST", codesPath, mt, map[string]any{"note": "no count"}, 400, "invalid")
	var out struct{ Codes []string }
	if st := a.call("POST", codesPath, mt, map[string]any{"count": 2, "note": "the press"}, &out); st != 201 || len(out.Codes) != 2 {
		t.Fatalf("make codes: %d %+v", st, out)
	}
	shopper, _ := a.newUser()
	a.Clock.Advance(time.Minute)
	var joined struct{ Ticket placedTicketJSON }
	queuePath := fmt.Sprintf("/api/goods/%d/queue", g.ID)
	if st := a.call("POST", queuePath, shopper, map[string]any{"code": out.Codes[0]}, &joined); st != 201 || joined.Ticket.State != "admitted" || joined.Ticket.Admission == "" {
		t.Fatalf("join with a code: %d %+v, want admitted at once", st, joined)
	}
	// The shopper who spent it sends it again (an answer lost, a 503): the
	// same admission again, not a refusal of their own code.
	var again struct{ Ticket placedTicketJSON }
	if st := a.call("POST", queuePath, shopper, map[string]any{"code": out.Codes[0]}, &again); st >= 300 || again.Ticket.State != "admitted" ||
		again.Ticket.AdmittedUntil != joined.Ticket.AdmittedUntil {
		t.Fatalf("the code sent again by its shopper: %d %+v, want the same admission as %+v", st, again, joined)
	}
	if st, code := a.grabAdmitted(shopper, g.ID, joined.Ticket.Admission); st != 201 {
		t.Fatalf("grab with the code's admission: %d %s", st, code)
	}
	other, _ := a.newUser()
	a.wantError("POST", queuePath, other, map[string]any{"code": out.Codes[0]}, 409, "conflict")
	a.wantError("POST", queuePath, other, map[string]any{"code": "NOSUCHCODE234567"}, 409, "conflict")
	var stats struct{ Queue map[string]any }
	if st := a.call("GET", fmt.Sprintf("/api/admin/goods/%d/queue", g.ID), mt, nil, &stats); st != 200 {
		t.Fatalf("the merchant's counters: %d", st)
	}
	for _, k := range []string{"waiting", "admitted", "inflow_per_s", "outflow_per_s", "no_shows", "rate_now", "paused", "expected_wait_s", "actual_wait_p50_s"} {
		if _, ok := stats.Queue[k]; !ok {
			t.Fatalf("the merchant's counters lack %s: %v", k, stats.Queue)
		}
	}
	if stats.Queue["rate_now"] != 1.0 || stats.Queue["paused"] != false {
		t.Fatalf("a room at 1 a second: %v", stats.Queue)
	}
	var audit struct {
		Entries []struct{ Action, Target, Detail string }
	}
	if st := a.call("GET", "/api/admin/audit", mt, nil, &audit); st != 200 {
		t.Fatalf("audit: %d", st)
	}
	found := false
	for _, e := range audit.Entries {
		raw, _ := json.Marshal(e)
		if strings.Contains(string(raw), out.Codes[0]) {
			t.Fatalf("the audit keeps a code: %s", raw)
		}
		found = found || strings.Contains(e.Detail, "the press")
	}
	if !found {
		t.Fatalf("no audit entry for the codes: %+v", audit.Entries)
	}
}
