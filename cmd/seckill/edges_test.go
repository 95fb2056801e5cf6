package main

import (
	"database/sql"
	"net/url"
	"sync"

	"syscall"

	"github.com/redis/go-redis/v9"

	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/fair/beacontest"
)

// A floor never makes an honest solution fail: at every floor the
// steering switches allow, on goods that ask no proof and on goods that ask
// one, the challenge GET /api/pow gives, solved as asked, is a 201.
func TestPowFloorAcceptsHonestSolutions(t *testing.T) {
	a := startApp(t)
	admin := a.adminToken()
	plain, asked := a.fairGoods(0, false, -time.Minute), a.fairGoods(12, false, -time.Minute)
	for _, floor := range []int{0, 1, 4, 6, 8, 10, 12, 16} {
		a.setSwitches(admin, map[string]any{"pow_floor_bits": floor})
		for _, g := range []goodsJSON{plain, asked} {
			shopper, _ := a.newUser()
			c := a.powChallenge(shopper, g.ID)
			if floor == 0 && g.ID == plain.ID {
				if c.Solutions != 0 {
					t.Fatalf("no floor, no pow_bits: challenge %+v, want none", c)
				}
				a.wantGrab(shopper, g.ID, "", 201, "")
				continue
			}
			if c.level() < floor {
				t.Fatalf("floor %d: challenge %+v asks less work (%d bits)", floor, c, c.level())
			}
			if st, code := a.grabWith(shopper, g.ID, solve(t, c)); st != 201 {
				t.Fatalf("floor %d, goods asking %s: an honest solution of %+v answered %d %s, want 201",
					floor, fmt.Sprint(g.ID == asked.ID), c, st, code)
			}
		}
	}
}

// A grab retried with its Idempotency-Key gets the first answer, whatever
// the fair-sale check would say of the retry (its proof of work is spent
// once; an admission may have lapsed): the shopper who lost the answer
// learns of the order they hold. A new key with the spent proof is refused.
func TestKeyedRetryOfAFairGrab(t *testing.T) {
	a := startApp(t)
	g := a.fairGoods(4, false, -time.Minute)
	shopper, _ := a.newUser()
	pow := solve(t, a.powChallenge(shopper, g.ID))
	h := bearer(shopper)
	h["X-Pow"], h["Idempotency-Key"] = pow, "grab-after-a-lost-answer"
	url := fmt.Sprintf("%s/api/goods/%d/grab", a.URL, g.ID)
	first := send(t, "POST", url, h, nil)
	if first.status != 201 {
		t.Fatalf("first grab: %d %s", first.status, first.body)
	}
	for i := 0; i < 3; i++ {
		again := send(t, "POST", url, h, nil)
		if again.status != 201 || !bytes.Equal(orderIDOf(t, again.body), orderIDOf(t, first.body)) {
			t.Fatalf("retry %d with the same key: %d %s, want 201 and the first order %s", i+1, again.status, again.body, first.body)
		}
	}
	h["Idempotency-Key"] = "another-grab"
	if r := send(t, "POST", url, h, nil); r.status != 403 || r.code() != "pow_invalid" {
		t.Fatalf("a new key with the spent proof: %d %s, want 403 pow_invalid", r.status, r.body)
	}
}

// orderIDOf is the raw "id" of the order in a grab's answer.
func orderIDOf(t *testing.T, body []byte) []byte {
	t.Helper()
	var out struct {
		Order struct {
			ID json.RawMessage `json:"id"`
		} `json:"order"`
	}
	if err := json.Unmarshal(body, &out); err != nil || len(out.Order.ID) == 0 {
		t.Fatalf("no order in %s", body)
	}
	return out.Order.ID
}

// An update that leaves a field out leaves it unchanged: a title fix
// mid-sale keeps the proof of work, the pre-registration and the
// description; a field sent is changed.
func TestUpdateLeavesOutUnchanged(t *testing.T) {
	a := startApp(t)
	mt, _ := a.newMerchant()
	sl := a.createSlot(mt, -time.Minute, time.Hour)
	var created struct{ Goods map[string]any }
	body := map[string]any{"slot_id": sl.ID, "title": "Guarded", "description": "kept", "price_cents": 10000, "seckill_price_cents": 2500,
		"stock": 10, "limit_per_user": 1, "pow_bits": 12, "preregistered_only": true}
	if st := a.call("POST", "/api/admin/goods", mt, body, &created); st != 201 {
		t.Fatalf("create: %d", st)
	}
	id := int64(created.Goods["id"].(float64))
	path := fmt.Sprintf("/api/admin/goods/%d", id)
	fix := map[string]any{"title": "Guarded, typo fixed", "price_cents": 10000, "seckill_price_cents": 2500, "stock": 10, "limit_per_user": 1}
	var got struct{ Goods map[string]any }
	if st := a.call("PUT", path, mt, fix, &got); st != 200 {
		t.Fatalf("title fix: %d", st)
	}
	for field, want := range map[string]any{"title": "Guarded, typo fixed", "pow_bits": 12.0, "preregistered_only": true, "description": "kept"} {
		if got.Goods[field] != want {
			t.Errorf("after a PUT that left it out, %s = %v, want %v", field, got.Goods[field], want)
		}
	}
	shopper, _ := a.newUser()
	if st, code := a.grabWith(shopper, id, ""); st != 403 || code != "pow_required" {
		t.Fatalf("a grab without proof after the title fix: %d %s, want 403 pow_required", st, code)
	}
	// A PUT that sends the title alone keeps every other field, the
	// prices, stock and limit too.
	before := got.Goods
	if st := a.call("PUT", path, mt, map[string]any{"title": "Guarded, alone"}, &got); st != 200 {
		t.Fatalf("a PUT of the title alone: %d %v", st, got.Goods)
	}
	for field, want := range before {
		if field == "title" || field == "remaining" || field == "updated_at" {
			continue
		}
		if fmt.Sprint(got.Goods[field]) != fmt.Sprint(want) {
			t.Errorf("after a PUT of the title alone, %s = %v, want %v as it was", field, got.Goods[field], want)
		}
	}
	if got.Goods["title"] != "Guarded, alone" {
		t.Errorf("a PUT of the title alone left the title %v", got.Goods["title"])
	}
	fix["pow_bits"], fix["preregistered_only"], fix["description"] = 0, false, ""
	if st := a.call("PUT", path, mt, fix, &got); st != 200 || got.Goods["pow_bits"] != 0.0 || got.Goods["preregistered_only"] != false || got.Goods["description"] != "" {
		t.Fatalf("a PUT that names them: %d %v", st, got.Goods)
	}
	// A slot's and a coupon's PUT alike: what is left out stays as it is.
	var slot struct{ Slot map[string]any }
	if st := a.call("PUT", fmt.Sprintf("/api/admin/slots/%d", sl.ID), mt, map[string]any{"title": "Renamed slot"}, &slot); st != 200 ||
		slot.Slot["title"] != "Renamed slot" || !sameTime(slot.Slot["start_at"], sl.StartAt) || !sameTime(slot.Slot["end_at"], sl.EndAt) {
		t.Errorf("a slot's PUT of the title alone: %d %v, want the title changed and the window %s–%s kept", st, slot.Slot, sl.StartAt, sl.EndAt)
	}
	now := a.Clock.Now()
	c := a.couponCreate(mt, "Kept window", 10, 1, now.Add(time.Hour), now.Add(2*time.Hour))
	end := now.Add(3 * time.Hour).UTC().Truncate(time.Second)
	var cp struct{ Coupon map[string]any }
	if st := a.call("PUT", fmt.Sprintf("/api/admin/coupons/%d", c.ID), mt, map[string]any{"grab_end_at": end.Format(time.RFC3339)}, &cp); st != 200 ||
		!sameTime(cp.Coupon["grab_start_at"], c.GrabStartAt) || !sameTime(cp.Coupon["grab_end_at"], end) {
		t.Errorf("a coupon's PUT of the end alone: %d %v, want the start %s kept and the end %s", st, cp.Coupon, c.GrabStartAt, end)
	}
}

// sameTime reports whether a time read from JSON is t.
func sameTime(v any, t time.Time) bool {
	s, _ := v.(string)
	got, err := time.Parse(time.RFC3339Nano, s)
	return err == nil && got.Equal(t)
}

// A waiting-room join is acknowledged only once a replica holds the place:
// while the master's replica lags (stopped) a join is 503 unavailable, never
// a place a failover could take back; once the replica is back it is given.
func TestQueueJoinWaitsForReplica(t *testing.T) {
	master := dbtest.StartServer(t)
	replica := master.StartReplica()
	a := startApp(t, func(c *Config) { c.RedisURL, c.RedisWaitTimeout = "redis://"+master.Addr, 2*time.Second })
	_, g := a.queueGoods(10, 5, time.Hour, nil)
	early, _ := a.newUser()
	if st, code, _ := a.joinQueue(early, g.ID, ""); st >= 300 {
		t.Fatalf("a join with the replica in step: %d %s", st, code)
	}
	shopper, _ := a.newUser()
	replica.Signal(syscall.SIGSTOP)
	if st, code, _ := a.joinQueue(shopper, g.ID, ""); st != 503 || code != "unavailable" {
		replica.Signal(syscall.SIGCONT)
		t.Fatalf("a join while the replica lags: %d %s, want 503 unavailable", st, code)
	}
	replica.Signal(syscall.SIGCONT)
	var st int
	var tk ticketJSON
	eventually(t, time.Minute, "the join to be acknowledged once the replica is back", func() bool {
		st, _, tk = a.joinQueue(shopper, g.ID, "")
		return st != 503
	})
	if st >= 300 {
		t.Fatalf("the join retried: %d %+v", st, tk)
	}
}

// A raffle's page says what its draw promises: with a public beacon that
// nobody can steer it; without one, plainly, that whoever runs the server
// could.
func TestRafflePageSaysWhatItPromises(t *testing.T) {
	for _, withBeacon := range []bool{false, true} {
		var opts []func(*Config)
		if withBeacon {
			b := beacontest.New(t, time.Now().Add(-time.Hour), 3*time.Second)
			opts = append(opts, func(c *Config) { c.RaffleBeaconURL = b.URL })
		}
		a := startApp(t, opts...)
		_, g := a.raffleGoods(3, time.Hour)
		page := string(send(t, "GET", fmt.Sprintf("%s/goods/%d/raffle", a.URL, g.ID), nil, nil).body)
		want := `data-testid="raffle-promise" data-beacon="0"`
		if withBeacon {
			want = `data-testid="raffle-promise" data-beacon="1"`
		}
		if !strings.Contains(page, want) {
			t.Fatalf("beacon %v: the raffle page has no %s", withBeacon, want)
		}
		if !withBeacon && !strings.Contains(page, "could add entries of their own") {
			t.Fatalf("a draw without a beacon: the page does not say the operator could steer it")
		}
	}
}

// argsRecorder keeps the arguments of every command a client sends.
type argsRecorder struct {
	mu   sync.Mutex
	args []string
}

func (r *argsRecorder) note(cmd redis.Cmder) {
	r.mu.Lock()
	r.args = append(r.args, fmt.Sprint(cmd.Args()...))
	r.mu.Unlock()
}

// Before its start a waiting room's seed goes to no Redis command: joins
// are placed without it, so no command log, monitor or replica stream
// shows it while places can still be timed against it.
func TestQueueSeedKeptFromJoins(t *testing.T) {
	a := startApp(t)
	_, g := a.queueGoods(5, 1, time.Hour, nil)
	rec := &argsRecorder{}
	a.Redis.Client.AddHook(onCommand(rec.note))
	if a.Backend.Pipe != nil {
		a.Backend.Pipe.Client().AddHook(onCommand(rec.note))
	}
	for range 3 {
		tok, _ := a.newUser()
		if st, code, _ := a.joinQueue(tok, g.ID, ""); st >= 300 {
			t.Fatalf("join: %d %s", st, code)
		}
	}
	// The store keeps it sealed: a copy of the store does not tell it.
	var plain string
	var sealed sql.NullString
	if err := a.SQL.R.QueryRow(`SELECT seed, seed_sealed FROM queue_rooms WHERE goods_id = ?`, g.ID).Scan(&plain, &sealed); err != nil || plain != "" || !sealed.Valid {
		t.Fatalf("the room's row: seed %q, sealed %v (%v), want no plain seed and a sealed one", plain, sealed.Valid, err)
	}
	rec.mu.Lock()
	before := append([]string(nil), rec.args...)
	rec.mu.Unlock()
	a.Clock.Advance(time.Hour + time.Second)
	var room queueRoomJSON
	if st := a.call("GET", fmt.Sprintf("/api/goods/%d/queue/room", g.ID), "", nil, &room); st != 200 || room.Seed == "" {
		t.Fatalf("the room after the start: %d %+v", st, room)
	}
	seed := room.Seed
	if strings.Contains(sealed.String, seed) {
		t.Fatal("the sealed seed holds the seed in plain")
	}
	for _, c := range before {
		if strings.Contains(c, seed) {
			t.Fatalf("a command before the start carried the seed: %.200s", c)
		}
	}
}

// GET /api/pow names goods when it is not a goods id: negative, zero, not a number.
func TestPowQueryInvalid(t *testing.T) {
	a := startApp(t)
	ut, _ := a.newUser()
	for _, q := range []string{"-5", "0", "abc", "", "1.5"} {
		a.wantInvalid(t, "GET", "/api/pow?"+url.Values{"goods": {q}}.Encode(), ut, nil, "goods")
	}
}
