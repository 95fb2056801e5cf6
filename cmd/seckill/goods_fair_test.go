package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db/fair"
)

// powChallenge is GET /api/pow's answer.
type powChallenge struct {
	Algorithm string    `json:"algorithm"`
	Challenge string    `json:"challenge"`
	Bits      int       `json:"bits"`
	Solutions int       `json:"solutions"`
	ExpiresAt time.Time `json:"expires_at"`
	Signature string    `json:"signature"`
}

// fairGoods creates live goods with a proof of work of powBits and, when prereg, open only to pre-registered shoppers.
func (a *testApp) fairGoods(powBits int, prereg bool, start time.Duration) goodsJSON {
	a.T.Helper()
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, start, time.Hour)
	var out struct{ Goods goodsJSON }
	body := map[string]any{"slot_id": sl.ID, "title": "Fair " + fmt.Sprint(userSeq.Add(1)), "price_cents": 10000,
		"seckill_price_cents": 2500, "stock": 100, "limit_per_user": 10, "pow_bits": powBits, "preregistered_only": prereg}
	if st := a.call("POST", "/api/admin/goods", mt, body, &out); st != 201 {
		a.T.Fatalf("create goods: %d", st)
	}
	return out.Goods
}

// powChallenge asks a challenge for the shopper signed in with token.
func (a *testApp) powChallenge(token string, goodsID int64) powChallenge {
	a.T.Helper()
	var c powChallenge
	if st := a.call("GET", fmt.Sprintf("/api/pow?goods=%d", goodsID), token, nil, &c); st != 200 {
		a.T.Fatalf("pow challenge of goods %d: %d", goodsID, st)
	}
	return c
}

// solve finds the nonces as the browser does, from the answer's own
// description: c.Solutions distinct nonces n, each with SHA-256(challenge + n)
// starting with c.Bits zero bits.
func solve(t testing.TB, c powChallenge) string {
	t.Helper()
	if c.Algorithm != "SHA-256" || c.Bits <= 0 || c.Solutions < 1 {
		t.Fatalf("challenge %+v", c)
	}
	var found []string
	for i := 0; len(found) < c.Solutions; i++ {
		if n := strconv.Itoa(i); zeroBits(sha256.Sum256([]byte(c.Challenge+n))) >= c.Bits {
			found = append(found, n)
		}
	}
	return c.Challenge + ":" + strings.Join(found, ",") + ":" + c.Signature
}

// zeroBits counts the zero bits a digest starts with.
func zeroBits(d [32]byte) int {
	z := 0
	for _, b := range d {
		z += bits.LeadingZeros8(b)
		if b != 0 {
			break
		}
	}
	return z
}

// level is the work a challenge asks: its bits plus log2 of its solutions.
func (c powChallenge) level() int {
	if c.Solutions == 0 {
		return 0
	}
	return c.Bits + bits.Len(uint(c.Solutions)) - 1
}

// grabWith grabs with an X-Pow header ("" for none) and returns the status and the error code.
func (a *testApp) grabWith(token string, goodsID int64, pow string) (int, string) {
	a.T.Helper()
	return a.grabHeader(token, goodsID, "X-Pow", pow)
}

// grabHeader grabs with one header of the fair sale's (none when value is
// "") and returns the status and the error code.
func (a *testApp) grabHeader(token string, goodsID int64, header, value string) (int, string) {
	a.T.Helper()
	req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/goods/%d/grab", a.URL, goodsID), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if value != "" {
		req.Header.Set(header, value)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.T.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var e apiError
	json.Unmarshal(raw, &e)
	return res.StatusCode, e.Error.Code
}

func (a *testApp) wantGrab(token string, goodsID int64, pow string, status int, code string) {
	a.T.Helper()
	if st, c := a.grabWith(token, goodsID, pow); st != status || c != code {
		a.T.Fatalf("grab goods %d with %q: got %d %q, want %d %q", goodsID, pow, st, c, status, code)
	}
}

func TestFairPowGrab(t *testing.T) {
	a := startApp(t)
	g := a.fairGoods(8, false, -time.Minute)
	other := a.fairGoods(8, false, -time.Minute)
	plain := a.fairGoods(0, false, -time.Minute)
	shopper, _ := a.newUser()
	neighbour, _ := a.newUser()

	if c := a.powChallenge(shopper, plain.ID); c.Bits != 0 || c.Solutions != 0 {
		t.Fatalf("goods without a proof of work: challenge %+v, want 0 bits", c)
	}
	a.wantGrab(shopper, plain.ID, "", 201, "")
	a.wantError("GET", fmt.Sprintf("/api/pow?goods=%d", g.ID), "", nil, 401, "unauthorized") // signed-in callers only
	a.wantError("GET", "/api/pow?goods=999999", shopper, nil, 404, "not_found")
	a.wantError("GET", "/api/pow?goods=x", shopper, nil, 400, "invalid")

	a.wantGrab(shopper, g.ID, "", 403, "pow_required")
	c := a.powChallenge(shopper, g.ID)
	if c.level() != 8 || c.Solutions != 4 || !c.ExpiresAt.After(a.Clock.Now()) || c.ExpiresAt.After(a.Clock.Now().Add(time.Minute)) {
		t.Fatalf("challenge %+v, want four solutions of 6 bits expiring within a minute", c)
	}
	good := solve(t, c)
	parts := strings.SplitN(good, ":", 3)
	nonces := strings.Split(parts[1], ",")
	// A nonce that does not solve it: the first that fails, in place of the last.
	for i := 0; ; i++ {
		x := "x" + strconv.Itoa(i)
		if zeroBits(sha256.Sum256([]byte(parts[0]+x))) < c.Bits {
			a.wantGrab(shopper, g.ID, parts[0]+":"+strings.Join(append(nonces[:3:3], x), ",")+":"+parts[2], 403, "pow_invalid")
			break
		}
	}
	a.wantGrab(shopper, g.ID, parts[0]+":"+strings.Join(nonces[:3], ",")+":"+parts[2], 403, "pow_invalid") // too few
	a.wantGrab(shopper, g.ID, parts[0]+":"+parts[1]+":"+strings.Repeat("0", 32), 403, "pow_invalid")       // forged signature
	a.wantGrab(shopper, g.ID, "garbage", 403, "pow_invalid")                                               //
	a.wantGrab(shopper, other.ID, good, 403, "pow_invalid")                                                // another goods' challenge
	a.wantGrab(neighbour, g.ID, good, 403, "pow_invalid")                                                  // another shopper's
	if s := a.stats(a.adminToken(), g.ID); s.Unpaid != 0 {
		t.Fatalf("refused grabs made %d orders", s.Unpaid)
	}

	a.wantGrab(shopper, g.ID, good, 201, "")
	a.wantGrab(shopper, g.ID, good, 403, "pow_invalid") // each solution is good once

	late := solve(t, a.powChallenge(shopper, g.ID))
	a.advance(time.Minute)
	a.wantGrab(shopper, g.ID, late, 403, "pow_invalid") // expired
	a.wantGrab(shopper, g.ID, solve(t, a.powChallenge(shopper, g.ID)), 201, "")
}

// Challenges for first-come goods are given from 30 s before the start,
// for a raffle from its entries' start: none to stockpile before.
func TestFairPowFromThirtySecondsBefore(t *testing.T) {
	a := startApp(t)
	a.Clock.Freeze() // a second before the boundary stays a second before it
	g := a.fairGoods(8, false, time.Minute)
	shopper, _ := a.newUser()
	a.wantError("GET", fmt.Sprintf("/api/pow?goods=%d", g.ID), shopper, nil, 409, "not_started")
	a.advance(29 * time.Second)
	a.wantError("GET", fmt.Sprintf("/api/pow?goods=%d", g.ID), shopper, nil, 409, "not_started")
	a.advance(time.Second)
	pow := solve(t, a.powChallenge(shopper, g.ID))
	a.advance(30 * time.Second)
	a.wantGrab(shopper, g.ID, pow, 201, "") // solved before the open, good at it
}

// A solution used on one web process is refused on another: the replay
// mark is in Redis, and both sign with the server's key.
func TestFairPowReplayAcrossProcesses(t *testing.T) {
	a := startApp(t)
	cfg := a.Config
	cfg.RedisURL = a.Redis.URL
	b := startMain(t, cfg, ModeWeb)
	g := a.fairGoods(8, false, -time.Minute)
	shopper, _ := a.newUser()

	pow := solve(t, b.powChallenge(shopper, g.ID)) // issued by b, good on a
	a.wantGrab(shopper, g.ID, pow, 201, "")
	b.wantGrab(shopper, g.ID, pow, 403, "pow_invalid")
	b.wantGrab(shopper, g.ID, solve(t, a.powChallenge(shopper, g.ID)), 201, "")
}

func TestFairPreregisteredOnly(t *testing.T) {
	a := startApp(t)
	g := a.fairGoods(0, true, 30*time.Minute)
	booked, _ := a.newUser()
	walkIn, _ := a.newUser()
	if st := a.call("PUT", fmt.Sprintf("/api/goods/%d/reminders", g.ID), booked, map[string]any{"minutes_before": 5, "channel": "app"}, nil); st != 200 {
		t.Fatalf("book reminder: %d", st)
	}
	a.advance(31 * time.Minute)
	var e apiError
	if st := a.call("POST", fmt.Sprintf("/api/goods/%d/grab", g.ID), walkIn, nil, &e); st != 403 || e.Error.Code != "forbidden" ||
		!strings.Contains(e.Error.Message, "booking its reminder") {
		t.Fatalf("grab without a booking: %d %+v, want 403 forbidden with a message", st, e)
	}
	a.wantGrab(booked, g.ID, "", 201, "")

	// With a proof of work as well: both are asked.
	h := a.fairGoods(8, true, -time.Minute)
	a.wantGrab(walkIn, h.ID, solve(t, a.powChallenge(walkIn, h.ID)), 403, "forbidden")
}

// The proof of work grows while goods is under attack (many refusals per
// admitted grab) and shrinks after.
func TestFairPowRaisedUnderAttack(t *testing.T) {
	a := startApp(t)
	g := a.fairGoods(6, false, -time.Minute)
	shopper, _ := a.newUser()
	// The clock stands still but for the test's steps, each to half a
	// second into the next attack window: however slow the machine, an
	// attack falls in one window and a quiet window is quiet.
	a.Clock.Freeze()
	nextWindow := func() {
		now := a.Clock.Now()
		a.advance(now.Truncate(fair.PowWindow).Add(fair.PowWindow + 500*time.Millisecond).Sub(now))
	}
	attack := func(bots []string) {
		nextWindow()
		for i := 0; i < 30; i++ {
			a.wantGrab(bots[i%len(bots)], g.ID, "", 403, "pow_required")
		}
	}
	// One account's 30 refused grabs in a window raise nobody's work:
	// each shopper's refusals count once a window.
	one, _ := a.newUser()
	attack([]string{one})
	nextWindow()
	if c := a.powChallenge(shopper, g.ID); c.level() != 6 {
		t.Fatalf("after one account's failures: level %d, want the merchant's 6", c.level())
	}
	// Thirty accounts refused in one window are an attack.
	var bots []string
	for range 30 {
		b, _ := a.newUser()
		bots = append(bots, b)
	}
	attack(bots)
	nextWindow()
	if c := a.powChallenge(shopper, g.ID); c.level() != 8 {
		t.Fatalf("under attack: level %d, want 8", c.level())
	}
	a.wantGrab(shopper, g.ID, solve(t, a.powChallenge(shopper, g.ID)), 201, "")
	nextWindow() // after a quiet window
	if c := a.powChallenge(shopper, g.ID); c.level() != 6 {
		t.Fatalf("after the attack: level %d, want 6", c.level())
	}
}

// fairModeJSON is the fair-sale fields of a goods answer.
type fairModeJSON struct {
	Mode             string     `json:"mode"`
	QueueRate        int        `json:"queue_rate"`
	AdmissionSeconds int        `json:"admission_seconds"`
	EntryStartAt     *time.Time `json:"entry_start_at"`
}

// A goods' mode and its fields are set at creation or before the sale,
// checked, kept by an update that leaves them out, and fixed once the
// sale has started (the queue's rate and admission may still change).
func TestFairModeFields(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, time.Hour, time.Hour)
	body := func(extra map[string]any) map[string]any {
		b := map[string]any{"slot_id": sl.ID, "title": "Mode " + fmt.Sprint(userSeq.Add(1)), "price_cents": 10000,
			"seckill_price_cents": 2500, "stock": 10}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	create := func(extra map[string]any) (int64, fairModeJSON) {
		t.Helper()
		var out struct {
			Goods struct {
				ID int64 `json:"id"`
				fairModeJSON
			}
		}
		if st := a.call("POST", "/api/admin/goods", mt, body(extra), &out); st != 201 {
			t.Fatalf("create %v: %d", extra, st)
		}
		return out.Goods.ID, out.Goods.fairModeJSON
	}

	_, plain := create(nil)
	if plain.Mode != "first_come" || plain.QueueRate != 0 || plain.AdmissionSeconds != 120 || plain.EntryStartAt != nil {
		t.Fatalf("defaults: %+v", plain)
	}
	qid, q := create(map[string]any{"mode": "queue", "queue_rate": 50, "admission_seconds": 60})
	if q.Mode != "queue" || q.QueueRate != 50 || q.AdmissionSeconds != 60 {
		t.Fatalf("queue: %+v", q)
	}
	before := a.Clock.Now().Add(-time.Second)
	rid, r := create(map[string]any{"mode": "raffle"})
	if r.Mode != "raffle" || r.EntryStartAt == nil || r.EntryStartAt.Before(before) || r.EntryStartAt.After(a.Clock.Now()) {
		t.Fatalf("raffle: %+v, want entries open from its creation", r)
	}
	listed := func() int {
		t.Helper()
		var out struct{ Goods []goodsJSON }
		if st := a.call("GET", fmt.Sprintf("/api/slots/%d/goods", sl.ID), "", nil, &out); st != 200 {
			t.Fatalf("slot's goods: %d", st)
		}
		return len(out.Goods)
	}
	n := listed()
	// Bad input in any fair-sale field: 400 invalid, nothing created; no
	// value a client can send means "left out".
	for _, bad := range []map[string]any{{"mode": "lottery"}, {"queue_rate": -5}, {"mode": "queue", "queue_rate": -1},
		{"admission_seconds": 5}, {"pow_bits": 25}, {"pow_bits": -1}, {"mode": "queue", "admission_seconds": -1},
		{"mode": "raffle", "entry_start_at": sl.StartAt.Add(time.Minute).Format(time.RFC3339)}, // entries would end before they start
		{"mode": "raffle", "entry_start_at": sl.StartAt.Format(time.RFC3339Nano)},              // an empty window
	} {
		a.wantError("POST", "/api/admin/goods", mt, body(bad), 400, "invalid")
	}
	if m := listed(); m != n {
		t.Fatalf("refused creations left %d goods, want %d", m, n)
	}

	// An update that leaves the fields out keeps them; one that names them changes them.
	var got struct{ Goods fairModeJSON }
	upd := body(nil)
	if st := a.call("PUT", fmt.Sprintf("/api/admin/goods/%d", qid), mt, upd, &got); st != 200 || got.Goods != q {
		t.Fatalf("update leaving the mode out: %d %+v, want %+v", st, got.Goods, q)
	}
	entries := sl.StartAt.Add(-30 * time.Minute).UTC().Truncate(time.Second)
	upd = body(map[string]any{"mode": "raffle", "entry_start_at": entries.Format(time.RFC3339)})
	if st := a.call("PUT", fmt.Sprintf("/api/admin/goods/%d", rid), mt, upd, &got); st != 200 ||
		got.Goods.EntryStartAt == nil || !got.Goods.EntryStartAt.Equal(entries) {
		t.Fatalf("moving the entry window: %d %+v", st, got.Goods)
	}

	// Once the sale has started the mode is fixed; the queue's pace is not.
	a.advance(time.Hour + time.Second)
	a.wantError("PUT", fmt.Sprintf("/api/admin/goods/%d", qid), mt, body(map[string]any{"mode": "first_come"}), 409, "conflict")
	if st := a.call("PUT", fmt.Sprintf("/api/admin/goods/%d", qid), mt, body(map[string]any{"queue_rate": 5}), &got); st != 200 ||
		got.Goods.Mode != "queue" || got.Goods.QueueRate != 5 {
		t.Fatalf("slowing a live queue: %d %+v", st, got.Goods)
	}
	live := a.createSlot(mt, -time.Minute, time.Hour)
	b := body(map[string]any{"mode": "queue"})
	b["slot_id"] = live.ID
	a.wantError("POST", "/api/admin/goods", mt, b, 409, "conflict")
}
