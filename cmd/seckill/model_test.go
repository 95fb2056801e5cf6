package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"pgregory.net/rapid"

	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/tasks"
)

// The model-based checker of the sale: rapid draws sequences of what
// shoppers, the desk and an operator do to a first-come sale (grabs with
// and without an Idempotency-Key, with an honest proof of work or none,
// keyed retries, pay, cancel, refunds by the shopper and by the desk,
// orders expiring on the injected clock, the steering switches turned:
// sale_paused, pow_floor_bits up to 24, merchant_read_only; the goods
// edited with a PUT that sends only what changes, one shopper flooding
// grabs without a proof, and faults: the process restarted between steps,
// the Redis replica stopped under a keyed grab), sends each to the real
// HTTP API of one started server, and compares every answer with the
// reference model (model_ref_test.go). After every step the server's reads
// must agree with the model: nothing oversold, every order won kept by its
// shopper, nobody over the limit, every unit accounted for, the money paid
// less the money refunded equal to the sale's figures, every challenge
// asking the work of its level (an honest proof is accepted at every
// floor). A failure prints rapid's seed and the shrunk sequence, each step
// as it was sent.
//
// Budget: by default a few rounds of short sequences, about 20 s; with
// SECKILL_SOAK set to a duration (make soak DURATION=10m) rounds go on for
// that long. -rapid.checks, -rapid.steps and -rapid.seed (or RAPID_CHECKS,
// RAPID_STEPS, RAPID_SEED) run rapid's own way instead: one round as asked.

// modelBudget is how long the checker goes on starting rounds by default;
// a round started before it ends is finished.
const modelBudget = 18 * time.Second

// modelRounds bounds the default rounds, so a fast machine stops early too.
const modelRounds = 6

// modelRoundChecks is how many sequences a round runs (by default, and in a soak).
const modelRoundChecks, modelSoakRoundChecks = 3, 10

// modelSteps is the average length of a sequence.
const modelSteps = 20

// modelShrinkTime bounds the shrinking of a failure.
const modelShrinkTime = 2 * time.Minute

// modelExpiries bounds the expiries of one sequence (each waits for the
// expiry tick, about a second): more in a soak.
const modelExpiries, modelSoakExpiries = 2, 4

// modelExpiryGap is how far from the clock every deadline stays that the
// checker does not mean to pass: the wall time a sequence takes, on the
// slowest machine, never reaches it.
const modelExpiryGap = 10 * time.Minute

// modelFloor is the highest pow_floor_bits a sequence sets by default (a
// soak goes to 24: an honest proof of 2^24 digests takes seconds).
const modelFloor = 16

// modelFloodGrabs is how many grabs without a proof one shopper sends in
// a flood: more than the refusals that raise everyone's work, were one
// caller's refusals counted each.
const modelFloodGrabs = 25

// modelBounds bounds the costly steps of one sequence.
type modelBounds struct {
	Expiries, Restarts, Faults, Floods int
	Floor                              int // the highest floor set
}

// modelWait bounds a wait on the server's asynchronous work (an expiry
// tick, the flush to the store): generous, for a busy machine.
const modelWait = 30 * time.Second

func TestModel(t *testing.T) {
	t.Parallel()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		modelFailures.Lock()
		defer modelFailures.Unlock()
		t.Logf("model: the first failure said: %s", modelFailures.first)
		if modelFailures.last != modelFailures.first {
			t.Logf("model: the last failure (of the shrinking or the replay) said: %s", modelFailures.last)
		}
	})
	var soak time.Duration
	if s := os.Getenv("SECKILL_SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("SECKILL_SOAK=%q: want a duration such as 10m", s)
		}
		soak = d
	}
	// A Redis that outlives the process, so a step can restart it: a
	// master with a replica of its own where redis-server is at hand (a
	// step can then stop the replica: the write waits for it, and answers
	// 503), else an embedded one the test holds; REDIS_URL's otherwise.
	redisURL := dbtest.RedisURL(t)
	var replica *dbtest.Server
	if redisURL == "" {
		if _, err := exec.LookPath("redis-server"); err == nil {
			master := dbtest.StartServer(t)
			replica = master.StartReplica()
			redisURL = "redis://" + master.Addr
		} else {
			mr := miniredis.NewMiniRedis()
			if err := mr.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(mr.Close)
			redisURL = "redis://" + mr.Addr()
		}
	}
	a := startApp(t, func(c *Config) {
		c.RedisURL = redisURL
		if replica != nil {
			// The longest wait the setting allows: a healthy replica
			// confirms within it however busy the machine, a stopped one never.
			c.RedisWaitTimeout = 2 * time.Second
		}
	})
	bounds := modelBounds{Expiries: modelExpiries, Restarts: 1, Faults: 1, Floods: 1, Floor: modelFloor}
	if soak > 0 {
		bounds = modelBounds{Expiries: modelSoakExpiries, Restarts: 2, Faults: 2, Floods: 2, Floor: modelMaxPowBits}
	}
	prop := func(rt *rapid.T) {
		m := newModelMachine(rt, t, a, replica, bounds)
		rt.Repeat(map[string]func(*rapid.T){
			"":              m.check,
			"grab":          func(rt *rapid.T) { m.grab(rt, false) },
			"grab_keyed":    func(rt *rapid.T) { m.grab(rt, true) },
			"retry_keyed":   m.retry,
			"pay":           m.pay,
			"cancel":        m.cancel,
			"refund":        m.refund,
			"desk_refund":   m.deskRefund,
			"intrude":       m.intrude,
			"expire":        m.expire,
			"switch":        m.switchOne,
			"floor":         m.floor,
			"edit":          m.edit,
			"flood":         m.flood,
			"restart":       m.restart,
			"replica_fault": m.replicaFault,
			"join":          m.join,
			"bad_input":     m.badInput,
		})
		m.settle(rt)
	}

	budget, checks, rounds := modelBudget, modelRoundChecks, modelRounds
	if soak > 0 {
		budget, checks, rounds = soak, modelSoakRoundChecks, 0
	}
	asked := modelFlagGiven("rapid.checks") || modelFlagGiven("rapid.seed")
	modelFlagDefault(t, "rapid.checks", strconv.Itoa(checks))
	modelFlagDefault(t, "rapid.steps", strconv.Itoa(modelSteps))
	// Each replay starts a sequence on the server (a second or so with the
	// expiry ticks it waits for): rapid's default 30 s shrinks little.
	modelFlagDefault(t, "rapid.shrinktime", modelShrinkTime.String())
	if asked {
		rapid.Check(t, prop) // as asked: one round, replayable by its seed
		return
	}
	start := time.Now()
	for round := 1; ; round++ {
		rapid.Check(t, prop) // a new random seed each round
		spent := time.Since(start)
		t.Logf("model: round %d (%d sequences) passed, %s in all", round, checks, spent.Round(time.Millisecond))
		// No round starts that the rounds so far say would end past the
		// budget (a soak's round takes a minute or more): the budget is
		// what the run takes, CI's minutes included.
		if spent+spent/time.Duration(round) > budget || (rounds > 0 && round >= rounds) {
			return
		}
	}
}

// modelFlagsGiven are rapid's flags set on the command line or in their
// environment variables (rapid.checks: RAPID_CHECKS), read before this
// test sets any itself.
var modelFlagsGiven = sync.OnceValue(func() map[string]bool {
	given := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	flag.VisitAll(func(f *flag.Flag) {
		if name, ok := strings.CutPrefix(f.Name, "rapid."); ok {
			if _, set := os.LookupEnv("RAPID_" + strings.ToUpper(name)); set {
				given[f.Name] = true
			}
		}
	})
	return given
})

// modelFlagGiven reports whether rapid's flag was given.
func modelFlagGiven(name string) bool { return modelFlagsGiven()[name] }

// modelFlagDefault sets rapid's flag for this test unless it was given.
func modelFlagDefault(t *testing.T, name, value string) {
	if modelFlagGiven(name) {
		return
	}
	f := flag.Lookup(name)
	old := f.Value.String()
	if err := flag.Set(name, value); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { flag.Set(name, old) })
}

// modelMachine drives one sequence: fresh goods and shoppers on the shared
// server, the model of their sale, and the keyed writes sent so far.
type modelMachine struct {
	tb       testing.TB     // the test, which a restarted process belongs to
	a        *testApp       // the process; a restart replaces what it holds
	replica  *dbtest.Server // nil: no replica to stop
	bounds   modelBounds
	restarts int
	faults   int
	floods   int
	ref      modelSale
	client   *http.Client
	admin    string
	merchant string
	slotID   int64
	goods    []int64 // the goods' IDs, by model index
	queue    int64   // the waiting room's goods, its sale days ahead
	shoppers []modelShopper
	keyed    []*modelKeyed
	step     int
	keys     int
	titles   int
	expiries int // expiries so far
	most     int // at most this many
}

type modelShopper struct {
	Token string
	ID    int64
}

// modelKeyed is a write sent with an Idempotency-Key, as sent, and its first answer.
type modelKeyed struct {
	What                     string // as messages name it: no server ID
	Method, Path, Token, Key string
	Body                     any
	Grab                     bool   // a grab: one refused because the sale was paused is not remembered
	Pow                      string // the X-Pow header sent ("" none): a retry sends it again
	First                    modelReply
}

// modelOrderJSON is an order as the API answers it (the desk's too).
type modelOrderJSON struct {
	ID          int64     `json:"id"`
	GoodsID     int64     `json:"goods_id"`
	UserID      int64     `json:"user_id"`
	AmountCents int64     `json:"amount_cents"`
	PaidCents   int64     `json:"paid_cents"`
	Unit        int64     `json:"unit"`
	Status      string    `json:"status"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// modelReply is one answer of the API, decoded as far as the checker reads it.
type modelReply struct {
	Status   int
	Code     string
	Order    modelOrderJSON
	Orders   []modelOrderJSON
	Goods    goodsJSON
	PowBits  int // the goods' pow_bits
	Paused   bool
	Switches switchesJSON
	Raw      string
}

// String is the answer as a message says it: its status and its code or
// the status of the order it carries (no server ID).
func (r modelReply) String() string {
	switch {
	case r.Code != "":
		return fmt.Sprintf("%d %s", r.Status, r.Code)
	case r.Order.Status != "":
		return fmt.Sprintf("%d (order %s)", r.Status, r.Order.Status)
	}
	return fmt.Sprint(r.Status)
}

// matches reports whether the answer is what the model says it must be.
func (r modelReply) matches(w modelAnswer) bool {
	return r.Status == w.Status && r.Code == w.Code && (w.Order == "" || r.Order.Status == w.Order)
}

// newModelMachine starts a sequence: the sale resumed (the switches are the
// server's, shared by every sequence), a merchant with one or two goods of
// small stock in a slot open for a week, and a few shoppers.
func newModelMachine(t *rapid.T, tb testing.TB, a *testApp, replica *dbtest.Server, bounds modelBounds) *modelMachine {
	m := &modelMachine{tb: tb, a: a, replica: replica, bounds: bounds, client: &http.Client{Timeout: modelWait}, most: bounds.Expiries}
	m.admin = m.login(t, a.Config.AdminUsername, testAdminPassword)
	if r := m.send(t, "PUT", "/api/admin/switches", m.admin, "", map[string]any{"sale_paused": false, "pow_floor_bits": 0, "merchant_read_only": false}); r.Status != 200 ||
		r.Paused || r.Switches.PowFloorBits != 0 || r.Switches.MerchantReadOnly {
		m.fatalf(t, "reset the switches: %s", r)
	}
	m.merchant, _ = a.newMerchant()
	m.slotID = a.createSlot(m.merchant, -time.Minute, 7*24*time.Hour).ID
	n := rapid.IntRange(1, 2).Draw(t, "goods")
	for i := range n {
		gd := modelGoods{
			Stock:   int64(rapid.IntRange(3, 6).Draw(t, "stock")),
			Limit:   int64(rapid.IntRange(1, 3).Draw(t, "limit")),
			Shards:  rapid.IntRange(1, 2).Draw(t, "shards"),
			Price:   []int64{2500, 1999}[i], // unlike, so a payment counted on the wrong goods shows
			Title:   fmt.Sprintf("Model goods#%d", i),
			PowBits: rapid.SampledFrom([]int{0, 0, 4, 8}).Draw(t, "pow_bits"),
		}
		body := map[string]any{"slot_id": m.slotID, "title": gd.Title, "description": "model", "price_cents": 10000,
			"seckill_price_cents": gd.Price, "stock": gd.Stock, "limit_per_user": gd.Limit, "shards": gd.Shards, "pow_bits": gd.PowBits}
		r := m.send(t, "POST", "/api/admin/goods", m.merchant, "", body)
		if r.Status != 201 {
			m.fatalf(t, "create goods#%d: %s", i, r)
		}
		m.goods = append(m.goods, r.Goods.ID)
		m.ref.Goods = append(m.ref.Goods, gd)
		t.Logf("goods#%d is goods %d: stock %d, limit %d a shopper, %d shards, %d cents, proof of work %d bits", i, r.Goods.ID, gd.Stock, gd.Limit, gd.Shards, gd.Price, gd.PowBits)
	}
	qs := a.createSlot(m.merchant, 6*24*time.Hour, time.Hour)
	r := m.send(t, "POST", "/api/admin/goods", m.merchant, "", map[string]any{"slot_id": qs.ID, "title": "Model waiting room", "price_cents": 10000,
		"seckill_price_cents": 2500, "stock": 3, "limit_per_user": 1, "mode": "queue", "queue_rate": 1, "admission_seconds": 60})
	if r.Status != 201 {
		m.fatalf(t, "create the waiting room's goods: %s", r)
	}
	m.queue = r.Goods.ID
	m.ref.Shoppers = rapid.IntRange(2, 4).Draw(t, "shoppers")
	for u := range m.ref.Shoppers {
		token, id := a.newUser()
		m.shoppers = append(m.shoppers, modelShopper{Token: token, ID: id})
		t.Logf("shopper#%d is user %d", u, id)
	}
	return m
}

func (m *modelMachine) login(t *rapid.T, username, password string) string {
	var out authAnswer
	buf, _ := json.Marshal(map[string]string{"username": username, "password": password})
	res, err := m.client.Post(m.a.URL+"/api/auth/login", "application/json", bytes.NewReader(buf))
	if err != nil {
		m.fatalf(t, "login %s: %v", username, err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 200 {
		m.fatalf(t, "login %s: %d %v", username, res.StatusCode, err)
	}
	return out.Token
}

// send makes one request (with the Idempotency-Key when key is not "") and
// decodes its answer.
func (m *modelMachine) send(t *rapid.T, method, path, token, key string, body any) modelReply {
	t.Helper()
	return m.sendPow(t, method, path, token, key, "", body)
}

// sendPow is send with an X-Pow header (none when pow is "").
func (m *modelMachine) sendPow(t *rapid.T, method, path, token, key, pow string, body any) modelReply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		buf, _ := json.Marshal(body)
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, m.a.URL+path, rd)
	if err != nil {
		m.fatalf(t, "%s %s: %v", method, path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if pow != "" {
		req.Header.Set("X-Pow", pow)
	}
	res, err := m.client.Do(req)
	if err != nil {
		m.fatalf(t, "%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var b struct {
		Order    modelOrderJSON   `json:"order"`
		Orders   []modelOrderJSON `json:"orders"`
		Goods    goodsJSON        `json:"goods"`
		Switches switchesJSON     `json:"switches"`
		Error    struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &b); err != nil {
			m.fatalf(t, "%s %s: %d %q is not JSON: %v", method, path, res.StatusCode, raw, err)
		}
	}
	var pb struct {
		Goods struct {
			PowBits int `json:"pow_bits"`
		} `json:"goods"`
	}
	json.Unmarshal(raw, &pb)
	return modelReply{Status: res.StatusCode, Code: b.Error.Code, Order: b.Order, Orders: b.Orders, Goods: b.Goods, PowBits: pb.Goods.PowBits,
		Paused: b.Switches.SalePaused, Switches: b.Switches, Raw: string(raw)}
}

// logf logs a step, numbered, so the shrunk sequence reads as what was sent.
func (m *modelMachine) logf(t *rapid.T, format string, args ...any) {
	m.step++
	t.Logf("step %d: "+format, append([]any{m.step}, args...)...)
}

// fail ends the sequence with a message that names no server ID (order#N,
// goods#G, shopper#U), so rapid sees a replay fail the same way and can
// shrink it; the IDs and the raw answers go to the log beside it.
func (m *modelMachine) fail(t *rapid.T, details string, format string, args ...any) {
	t.Helper()
	if details != "" {
		t.Logf("details: %s", details)
	}
	t.Logf("the orders' IDs: %s", m.ref.IDs())
	m.fatalf(t, format+"\nmodel: %s", append(args, m.ref.String())...)
}

// modelFailures keeps what the sequences' failures said, first and last,
// for the test to repeat at its end: rapid prints a failure's message
// above the replay of its sequence, and a log cut to its tail (CI's) would
// otherwise show the steps without what went wrong.
var modelFailures struct {
	sync.Mutex
	first, last string
}

// fatalf ends the sequence as t.Fatalf does, and keeps what it says.
func (m *modelMachine) fatalf(t *rapid.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	modelFailures.Lock()
	if modelFailures.first == "" {
		modelFailures.first = msg
	}
	modelFailures.last = msg
	modelFailures.Unlock()
	t.Fatal(msg)
}

// expect fails unless the answer is the model's.
func (m *modelMachine) expect(t *rapid.T, what string, r modelReply, w modelAnswer) {
	t.Helper()
	if !r.matches(w) {
		m.fail(t, r.Raw, "%s: the server answered %s, the model says %s", what, r, w)
	}
}

func (m *modelMachine) newKey() string {
	m.keys++
	return fmt.Sprintf("model-key-%d", m.keys) // the shoppers are the sequence's own
}

// remember keeps a keyed write's first answer for the retries. A grab
// refused because the sale was paused never reached the sale, so nothing is
// remembered of it: its key is as new.
// A grab refused for want of a proof of work, or a merchant's write
// refused while merchants are read-only, never reached the sale either.
func (m *modelMachine) remember(k *modelKeyed, r modelReply) {
	if k.Key == "" || (k.Grab && (r.Code == "unavailable" || r.Code == "pow_required")) || r.Code == "forbidden" {
		return
	}
	k.First = r
	m.keyed = append(m.keyed, k)
}

func (m *modelMachine) grab(t *rapid.T, keyed bool) { m.grabOne(t, keyed, false) }

// grabOne is a grab, with an honest proof when the goods asks one and
// withProof is set.
func (m *modelMachine) grabOne(t *rapid.T, keyed, withProof bool) {
	g := rapid.IntRange(0, len(m.goods)-1).Draw(t, "goods")
	u := rapid.IntRange(0, len(m.shoppers)-1).Draw(t, "shopper")
	k := &modelKeyed{What: fmt.Sprintf("grab goods#%d by shopper#%d", g, u), Method: "POST",
		Path: fmt.Sprintf("/api/goods/%d/grab", m.goods[g]), Token: m.shoppers[u].Token, Grab: true}
	if keyed {
		k.Key = m.newKey()
		k.What += " with key " + k.Key
	}
	// A grab brings an honest proof when the goods asks one, or now and
	// then none.
	level := m.ref.Level(g)
	proof := level == 0 || withProof || rapid.IntRange(0, 3).Draw(t, "proof") > 0
	if level > 0 && proof {
		k.Pow = m.solve(t, g, u)
		k.What += fmt.Sprintf(" with a proof of level %d", level)
	} else if level > 0 {
		k.What += fmt.Sprintf(" without the proof of level %d", level)
	}
	m.grabSent(t, g, u, k, m.ref.Grab(g, u, proof))
}

// grabSent sends the grab k of goods g by shopper u and checks its answer
// is want, and the order it won.
func (m *modelMachine) grabSent(t *rapid.T, g, u int, k *modelKeyed, want modelAnswer) {
	before := m.a.Clock.Now()
	r := m.sendPow(t, k.Method, k.Path, k.Token, k.Key, k.Pow, nil)
	after := m.a.Clock.Now()
	m.logf(t, "%s: %s (order %d)", k.What, r, r.Order.ID)
	m.grabAnswered(t, g, u, k, r, want, before, after)
}

// grabAnswered checks a grab's answer r (sent between before and after)
// against want and records the order it won.
func (m *modelMachine) grabAnswered(t *rapid.T, g, u int, k *modelKeyed, r modelReply, want modelAnswer, before, after time.Time) {
	m.expect(t, k.What, r, want)
	if r.Status == 201 {
		o := r.Order
		ttl := m.a.Config.OrderTTL
		switch {
		case o.UserID != m.shoppers[u].ID || o.GoodsID != m.goods[g]:
			m.fail(t, r.Raw, "%s: the order won is another shopper's or another goods'", k.What)
		case o.AmountCents != m.ref.Goods[g].Price:
			m.fail(t, r.Raw, "%s: the order's amount is %d, want the price %d", k.What, o.AmountCents, m.ref.Goods[g].Price)
		case o.ExpiresAt.Before(before.Add(ttl).Add(-time.Millisecond)) || o.ExpiresAt.After(after.Add(ttl).Add(time.Millisecond)):
			m.fail(t, fmt.Sprintf("expires at %s, the grab was sent at %s and answered at %s", o.ExpiresAt, before, after),
				"%s: the order does not expire %s after the grab", k.What, ttl)
		case m.ref.Find(o.ID) != nil:
			m.fail(t, r.Raw, "%s: the order won is %s, won before", k.What, m.ref.Name(o.ID))
		}
		m.ref.Won(g, u, o.ID, o.ExpiresAt)
	}
	m.remember(k, r)
}

// retry sends a keyed write again, exactly: it must answer as it did the
// first time (status, code, order and the order's status then), whatever
// happened since, the sale paused too.
func (m *modelMachine) retry(t *rapid.T) {
	if len(m.keyed) == 0 {
		t.Skip("no keyed write yet")
	}
	m.retryOf(t, m.keyed[rapid.IntRange(0, len(m.keyed)-1).Draw(t, "keyed")])
}

// retryOf sends the keyed write k again, exactly, and checks it answers
// as it did the first time.
func (m *modelMachine) retryOf(t *rapid.T, k *modelKeyed) {
	r := m.sendPow(t, k.Method, k.Path, k.Token, k.Key, k.Pow, k.Body)
	what := "retry of " + k.What
	m.logf(t, "%s (first %s): %s", what, k.First, r)
	f := k.First
	if r.Status != f.Status || r.Code != f.Code || r.Order.ID != f.Order.ID || r.Order.Status != f.Order.Status {
		m.fail(t, "first: "+f.Raw+"\nagain: "+r.Raw, "%s: answered %s with %s, the first answer was %s with %s",
			what, r, m.ref.Name(r.Order.ID), f, m.ref.Name(f.Order.ID))
	}
}

// order draws one of the sequence's orders, any status.
func (m *modelMachine) order(t *rapid.T) *modelOrder {
	return m.ref.Orders[rapid.IntRange(0, len(m.ref.Orders)-1).Draw(t, "order")]
}

// orderWrite sends a shopper's write on their order, keyed or not, and
// checks it against the model's answer.
func (m *modelMachine) orderWrite(t *rapid.T, op string, step func(*modelOrder, int) modelAnswer) {
	if len(m.ref.Orders) == 0 {
		t.Skip("no order yet")
	}
	o := m.order(t)
	keyed := rapid.Bool().Draw(t, "keyed")
	k := &modelKeyed{What: fmt.Sprintf("%s order#%d (goods#%d) by shopper#%d", op, o.N, o.Goods, o.Shopper), Method: "POST",
		Path: fmt.Sprintf("/api/orders/%d/%s", o.ID, op), Token: m.shoppers[o.Shopper].Token}
	if keyed {
		k.Key = m.newKey()
		k.What += " with key " + k.Key
	}
	was := o.Status
	want := step(o, o.Shopper)
	r := m.send(t, k.Method, k.Path, k.Token, k.Key, nil)
	m.logf(t, "%s, %s: %s", k.What, was, r)
	m.expect(t, k.What, r, want)
	m.sameOrder(t, k.What, r, o)
	m.remember(k, r)
	m.lost(t, k)
}

// sameOrder checks that a successful answer carries the order asked about,
// its shopper's, with what was paid for it.
func (m *modelMachine) sameOrder(t *rapid.T, what string, r modelReply, o *modelOrder) {
	t.Helper()
	if r.Status != 200 {
		return
	}
	paid := int64(0)
	if o.Status == "paid" || o.Status == "refunded" {
		paid = o.Amount
	}
	if r.Order.ID != o.ID || r.Order.UserID != m.shoppers[o.Shopper].ID {
		m.fail(t, r.Raw, "%s: answered %s, or another shopper's", what, m.ref.Name(r.Order.ID))
	}
	if r.Order.PaidCents != paid {
		m.fail(t, r.Raw, "%s: answered the order paid %d cents, want %d", what, r.Order.PaidCents, paid)
	}
}

func (m *modelMachine) pay(t *rapid.T)    { m.orderWrite(t, "pay", m.ref.Pay) }
func (m *modelMachine) cancel(t *rapid.T) { m.orderWrite(t, "cancel", m.ref.Cancel) }
func (m *modelMachine) refund(t *rapid.T) { m.orderWrite(t, "refund", m.ref.Refund) }

// deskRefund refunds an order from the desk, as the admin or as the goods'
// merchant, keyed or not.
func (m *modelMachine) deskRefund(t *rapid.T) {
	if len(m.ref.Orders) == 0 {
		t.Skip("no order yet")
	}
	o := m.order(t)
	byAdmin := rapid.Bool().Draw(t, "by_admin")
	keyed := rapid.Bool().Draw(t, "keyed")
	who, token := "the merchant", m.merchant
	if byAdmin {
		who, token = "the admin", m.admin
	}
	k := &modelKeyed{What: fmt.Sprintf("desk refund of order#%d (goods#%d, shopper#%d) by %s", o.N, o.Goods, o.Shopper, who), Method: "POST",
		Path: fmt.Sprintf("/api/admin/orders/%d/refund", o.ID), Token: token, Body: map[string]string{"reason": "model check"}}
	if keyed {
		k.Key = m.newKey()
		k.What += " with key " + k.Key
	}
	was := o.Status
	want := m.ref.DeskRefund(o, !byAdmin)
	r := m.send(t, k.Method, k.Path, k.Token, k.Key, k.Body)
	m.logf(t, "%s, %s: %s", k.What, was, r)
	m.expect(t, k.What, r, want)
	m.sameOrder(t, k.What, r, o)
	m.remember(k, r)
	m.lost(t, k)
}

// lost has the client of a keyed write lose its first answer now and then
// and retry at once, as a shopper or a desk clerk after a timeout does.
func (m *modelMachine) lost(t *rapid.T, k *modelKeyed) {
	if k.Key != "" && len(m.keyed) > 0 && m.keyed[len(m.keyed)-1] == k && rapid.Bool().Draw(t, "answer_lost") {
		m.retryOf(t, k)
	}
}

// intrude has another shopper read or write someone's order: not found,
// and nothing changes.
func (m *modelMachine) intrude(t *rapid.T) {
	if len(m.ref.Orders) == 0 {
		t.Skip("no order yet")
	}
	o := m.order(t)
	v := (o.Shopper + 1 + rapid.IntRange(0, len(m.shoppers)-2).Draw(t, "intruder")) % len(m.shoppers)
	op := rapid.SampledFrom([]string{"read", "pay", "cancel", "refund"}).Draw(t, "op")
	method, path := "POST", fmt.Sprintf("/api/orders/%d/%s", o.ID, op)
	if op == "read" {
		method, path = "GET", fmt.Sprintf("/api/orders/%d", o.ID)
	}
	r := m.send(t, method, path, m.shoppers[v].Token, "", nil)
	what := fmt.Sprintf("%s of shopper#%d's order#%d by shopper#%d", op, o.Shopper, o.N, v)
	m.logf(t, "%s: %s", what, r)
	m.expect(t, what, r, refused(404, "not_found"))
}

// expire moves the clock past an unpaid order's deadline (and past those
// of the orders won about when it was) and waits for the expiry tick to
// expire them: each reads expired, with no tick still at work, so its unit
// is back and every process heard of it.
func (m *modelMachine) expire(t *rapid.T) {
	unpaid := m.ref.Unpaid()
	if len(unpaid) == 0 || m.expiries >= m.most {
		t.Skip("nothing to expire, or expired enough")
	}
	o := unpaid[rapid.IntRange(0, len(unpaid)-1).Draw(t, "order")]
	m.expiries++
	target := m.ref.ExpiryTarget(o, modelExpiryGap)
	due := m.ref.Due(target)
	if d := target.Add(time.Second).Sub(m.a.Clock.Now()); d > 0 {
		m.a.Clock.Advance(d)
	}
	names := make([]string, len(due))
	for i, d := range due {
		names[i] = fmt.Sprintf("order#%d", d.N)
	}
	m.logf(t, "the clock passes order#%d's deadline: %s due", o.N, strings.Join(names, ", "))
	m.waitFor(t, strings.Join(names, ", ")+" to expire", func() (bool, string) {
		for _, d := range due {
			r := m.send(t, "GET", fmt.Sprintf("/api/orders/%d", d.ID), m.shoppers[d.Shopper].Token, "", nil)
			if r.Status != 200 || r.Order.Status != "expired" {
				return false, fmt.Sprintf("order#%d reads %s", d.N, r)
			}
		}
		active, err := m.a.Inspector.ListActiveTasks(tasks.QueueOrderExpire)
		if err != nil {
			return false, "the expiry queue could not be read"
		}
		for _, ti := range active {
			if ti.Type == tasks.TypeOrderExpireDue {
				return false, "an expiry tick is at work"
			}
		}
		return true, ""
	})
	for _, d := range due {
		d.Status = "expired"
	}
}

// join has a shopper join the waiting room (it takes no Idempotency-Key:
// a second join is the retry): a place each, the same one again.
func (m *modelMachine) join(t *rapid.T) {
	u := rapid.IntRange(0, len(m.shoppers)-1).Draw(t, "shopper")
	what := fmt.Sprintf("join of the waiting room by shopper#%d", u)
	want, place := m.ref.Join(u)
	r := m.send(t, "POST", fmt.Sprintf("/api/goods/%d/queue", m.queue), m.shoppers[u].Token, "", nil)
	m.logf(t, "%s: %s", what, r)
	m.expect(t, what, r, want)
	if r.Status < 300 {
		if tk := m.ticket(r); tk.JoinNumber != place || tk.Position != int64(len(m.ref.Places)) || tk.State != "waiting" {
			m.fail(t, r.Raw, "%s: answered join number %d, position %d (%s); the model says %d of %d", what, tk.JoinNumber, tk.Position, tk.State, place, len(m.ref.Places))
		}
	}
}

// modelTicket is a waiting room's ticket as far as the checker reads it.
type modelTicket struct {
	State      string `json:"state"`
	Position   int64  `json:"position"` // before the start: how many have joined
	JoinNumber int64  `json:"join_number"`
}

// ticket is the waiting room's ticket an answer carries.
func (m *modelMachine) ticket(r modelReply) modelTicket {
	var b struct{ Ticket modelTicket }
	json.Unmarshal([]byte(r.Raw), &b)
	return b.Ticket
}

// places checks every shopper's ticket: the model's join number, so the
// places are 1..n, one a shopper, and the position every ticket gives
// before the start, how many have joined; none for one who never joined.
func (m *modelMachine) places(t *rapid.T) {
	for u, s := range m.shoppers {
		r := m.send(t, "GET", fmt.Sprintf("/api/goods/%d/queue", m.queue), s.Token, "", nil)
		place := m.ref.Places[u]
		if place == 0 {
			if r.Status != 404 {
				m.fail(t, r.Raw, "shopper#%d never joined, yet their ticket reads %s", u, r)
			}
			continue
		}
		if tk := m.ticket(r); r.Status != 200 || tk.JoinNumber != place || tk.Position != int64(len(m.ref.Places)) {
			m.fail(t, r.Raw, "shopper#%d's ticket reads %s, join number %d, position %d; the model says %d of %d", u, r, tk.JoinNumber, tk.Position, place, len(m.ref.Places))
		}
	}
}

// badInput sends one of the requests the contract refuses 400 invalid
// (a merchant's refused 403 forbidden first while merchants are
// read-only): nothing changes, which the next check sees.
func (m *modelMachine) badInput(t *rapid.T) {
	g := rapid.IntRange(0, len(m.goods)-1).Draw(t, "goods")
	u := rapid.IntRange(0, len(m.shoppers)-1).Draw(t, "shopper")
	want := refused(400, "invalid")
	var what string
	var r modelReply
	switch kind := rapid.IntRange(0, 3).Draw(t, "bad_input"); kind {
	case 0:
		what = "switches with an unknown field"
		r = m.send(t, "PUT", "/api/admin/switches", m.admin, "", map[string]any{"sale_paused": !m.ref.Paused, "model_unknown_field": 1})
	case 1:
		what = "a challenge of goods -5"
		r = m.send(t, "GET", "/api/pow?goods=-5", m.shoppers[u].Token, "", nil)
	case 2:
		what = fmt.Sprintf("shopper#%d's join of the waiting room with an empty code", u)
		r = m.send(t, "POST", fmt.Sprintf("/api/goods/%d/queue", m.queue), m.shoppers[u].Token, "", map[string]string{"code": ""})
	default:
		what = fmt.Sprintf("an edit of goods#%d with entry_start_at 2030-13-01", g)
		r = m.send(t, "PUT", fmt.Sprintf("/api/admin/goods/%d", m.goods[g]), m.merchant, "", map[string]string{"entry_start_at": "2030-13-01T00:00:00Z"})
		if m.ref.ReadOnly {
			want = refused(403, "forbidden")
		}
	}
	m.logf(t, "%s: %s", what, r)
	m.expect(t, what, r, want)
	sw := m.send(t, "GET", "/api/admin/switches", m.admin, "", nil).Switches
	if sw.SalePaused != m.ref.Paused || sw.PowFloorBits != m.ref.Floor || sw.MerchantReadOnly != m.ref.ReadOnly {
		m.fail(t, "", "after %s the switches read paused %v, floor %d, read-only %v", what, sw.SalePaused, sw.PowFloorBits, sw.MerchantReadOnly)
	}
}

// switchOne turns one steering switch: sale_paused, pow_floor_bits (0 to
// the bound, every honest proof accepted at each) or merchant_read_only.
func (m *modelMachine) switchOne(t *rapid.T) {
	var change map[string]any
	switch kind := rapid.IntRange(0, 2).Draw(t, "switch"); kind {
	case 0:
		m.ref.Paused = rapid.Bool().Draw(t, "paused")
		change = map[string]any{"sale_paused": m.ref.Paused}
	case 1:
		m.setFloor(t)
		return
	default:
		m.ref.ReadOnly = rapid.Bool().Draw(t, "read_only")
		change = map[string]any{"merchant_read_only": m.ref.ReadOnly}
	}
	r := m.send(t, "PUT", "/api/admin/switches", m.admin, "", change)
	m.logf(t, "switches %v: %s", change, r)
	if sw := r.Switches; r.Status != 200 || sw.SalePaused != m.ref.Paused || sw.PowFloorBits != m.ref.Floor || sw.MerchantReadOnly != m.ref.ReadOnly {
		m.fail(t, r.Raw, "switches %v: answered %s, paused %v, floor %d, read-only %v", change, r, sw.SalePaused, sw.PowFloorBits, sw.MerchantReadOnly)
	}
}

// floor has the operator raise or lower the proof-of-work floor against
// an attack, and a shopper grab at once with the honest proof of the
// challenge then given: accepted at every floor.
func (m *modelMachine) floor(t *rapid.T) {
	m.setFloor(t)
	m.grabOne(t, rapid.Bool().Draw(t, "keyed"), true)
}

// setFloor sets pow_floor_bits to a floor drawn up to the bound.
func (m *modelMachine) setFloor(t *rapid.T) {
	var floors []int
	for _, f := range []int{0, 0, 1, 4, 6, 8, 10, 12, 16, 20, 24} {
		if f <= m.bounds.Floor {
			floors = append(floors, f)
		}
	}
	m.ref.Floor = rapid.SampledFrom(floors).Draw(t, "floor")
	r := m.send(t, "PUT", "/api/admin/switches", m.admin, "", map[string]any{"pow_floor_bits": m.ref.Floor})
	m.logf(t, "pow_floor_bits %d: %s", m.ref.Floor, r)
	if r.Status != 200 || r.Switches.PowFloorBits != m.ref.Floor {
		m.fail(t, r.Raw, "pow_floor_bits %d: answered %s, floor %d", m.ref.Floor, r, r.Switches.PowFloorBits)
	}
}

// edit has the merchant change goods mid-sale with a PUT that sends only
// what changes: the title, the proof of work, or both. Whatever is left
// out stays as it is; while merchants are read-only nothing changes.
func (m *modelMachine) edit(t *rapid.T) {
	g := rapid.IntRange(0, len(m.goods)-1).Draw(t, "goods")
	gd := &m.ref.Goods[g]
	body := map[string]any{}
	title, bits := gd.Title, gd.PowBits
	switch kind := rapid.IntRange(0, 2).Draw(t, "edit"); kind {
	case 0, 2:
		m.titles++
		title = fmt.Sprintf("Model goods#%d, edit %d", g, m.titles)
		body["title"] = title
		if kind == 0 {
			break
		}
		fallthrough
	case 1:
		bits = rapid.SampledFrom([]int{0, 4, 8, 12}).Draw(t, "pow_bits")
		body["pow_bits"] = bits
	}
	r := m.send(t, "PUT", fmt.Sprintf("/api/admin/goods/%d", m.goods[g]), m.merchant, "", body)
	what := fmt.Sprintf("edit of goods#%d to %v", g, body)
	m.logf(t, "%s: %s", what, r)
	if m.ref.ReadOnly {
		m.expect(t, what, r, refused(403, "forbidden"))
		return
	}
	m.expect(t, what, r, modelAnswer{Status: 200})
	if got := r.Goods; got.Title != title || r.PowBits != bits || got.Stock != gd.Stock || got.LimitPerUser != gd.Limit || got.Shards != gd.Shards || got.SeckillPriceCents != gd.Price {
		m.fail(t, r.Raw, "%s: answered title %q, pow_bits %d, stock %d, limit %d, %d shards, %d cents; want title %q, pow_bits %d and stock %d, limit %d, %d shards, %d cents as they were",
			what, got.Title, r.PowBits, got.Stock, got.LimitPerUser, got.Shards, got.SeckillPriceCents, title, bits, gd.Stock, gd.Limit, gd.Shards, gd.Price)
	}
	gd.Title, gd.PowBits = title, bits
}

// challenge asks shopper u's challenge for goods g: it must ask the work
// of the level the model says, no more, no less.
func (m *modelMachine) challenge(t *rapid.T, g, u int) powChallenge {
	level := m.ref.Level(g)
	r := m.send(t, "GET", fmt.Sprintf("/api/pow?goods=%d", m.goods[g]), m.shoppers[u].Token, "", nil)
	var c powChallenge
	json.Unmarshal([]byte(r.Raw), &c)
	if bits, n := PowShape(level); r.Status != 200 || c.Bits != bits || c.Solutions != n {
		m.fail(t, r.Raw, "shopper#%d's challenge of goods#%d: %s asking %d bits × %d; the level is %d: want %d bits × %d", u, g, r, c.Bits, c.Solutions, level, bits, n)
	}
	return c
}

// solve is an honest X-Pow for shopper u's grab of goods g: the challenge
// solved as it asks.
func (m *modelMachine) solve(t *rapid.T, g, u int) string {
	c := m.challenge(t, g, u)
	// The work (2^24 digests at a soak's top floor) takes seconds, more on
	// a busy machine: the process's clock stands meanwhile, so the minute
	// a challenge lasts is never spent by the test's own solver.
	defer m.a.Clock.Hold()()
	var found []string
	for i := 0; len(found) < c.Solutions; i++ {
		if n := strconv.Itoa(i); zeroBits(sha256.Sum256([]byte(c.Challenge+n))) >= c.Bits {
			found = append(found, n)
		}
	}
	return c.Challenge + ":" + strings.Join(found, ",") + ":" + c.Signature
}

// flood has one shopper send many grabs without a proof to goods asking
// one: each refused 403 pow_required; once the attack's window has closed
// on the clock, the other shoppers' challenges ask what they asked before.
func (m *modelMachine) flood(t *rapid.T) {
	var asking []int
	for g := range m.goods {
		if m.ref.Goods[g].PowBits > 0 {
			asking = append(asking, g)
		}
	}
	if len(asking) == 0 || m.ref.Paused || m.floods >= m.bounds.Floods {
		t.Skip("no goods asks a proof, the sale is paused, or flooded enough")
	}
	m.floods++
	g := rapid.SampledFrom(asking).Draw(t, "goods")
	u := rapid.IntRange(0, len(m.shoppers)-1).Draw(t, "shopper")
	// Half a second into the next attack window, so the flood lands in
	// one window however the wall clock stands: a replay counts the same.
	now := m.a.Clock.Now()
	m.a.Clock.Advance(now.Truncate(fair.PowWindow).Add(fair.PowWindow + 500*time.Millisecond).Sub(now))
	for range modelFloodGrabs {
		r := m.send(t, "POST", fmt.Sprintf("/api/goods/%d/grab", m.goods[g]), m.shoppers[u].Token, "", nil)
		m.expect(t, fmt.Sprintf("shopper#%d's grab of goods#%d without a proof", u, g), r, refused(403, "pow_required"))
	}
	m.a.Clock.Advance(fair.PowWindow + time.Second)
	m.logf(t, "shopper#%d sends %d grabs of goods#%d without a proof; the clock passes the attack's window", u, modelFloodGrabs, g)
	for v := range m.shoppers {
		if v != u {
			m.challenge(t, g, v)
		}
	}
}

// restart ends the server's process and starts another on the same Redis
// and store, its clock where the old one's was: every promise holds across.
func (m *modelMachine) restart(t *rapid.T) {
	if m.restarts >= m.bounds.Restarts {
		t.Skip("restarted enough")
	}
	m.restarts++
	offset := m.a.Clock.Offset()
	m.a.Main.Close()
	b := startMain(m.tb, m.a.Config, ModeServe)
	b.Clock.Advance(offset)
	*m.a = *b
	m.logf(t, "the process restarts")
}

// replicaFault stops the Redis replica while a keyed grab is sent: the
// grab cannot be acknowledged, 503 unavailable; once the replica is back
// its retry with the key answers what the grab did, the model's answer.
func (m *modelMachine) replicaFault(t *rapid.T) {
	if m.replica == nil || m.ref.Paused || m.faults >= m.bounds.Faults {
		t.Skip("no replica to stop, the sale is paused, or faulted enough")
	}
	m.faults++
	g := rapid.IntRange(0, len(m.goods)-1).Draw(t, "goods")
	u := rapid.IntRange(0, len(m.shoppers)-1).Draw(t, "shopper")
	k := &modelKeyed{What: fmt.Sprintf("grab goods#%d by shopper#%d", g, u), Method: "POST",
		Path: fmt.Sprintf("/api/goods/%d/grab", m.goods[g]), Token: m.shoppers[u].Token, Grab: true, Key: m.newKey()}
	k.What += " with key " + k.Key
	if m.ref.Level(g) > 0 {
		k.Pow = m.solve(t, g, u)
		k.What += " with a proof"
	}
	m.replica.Signal(syscall.SIGSTOP)
	r := m.sendPow(t, k.Method, k.Path, k.Token, k.Key, k.Pow, nil)
	m.replica.Signal(syscall.SIGCONT)
	m.logf(t, "%s while the replica is stopped: %s", k.What, r)
	m.expect(t, k.What+" while the replica is stopped", r, refused(503, "unavailable"))
	before := m.a.Clock.Now()
	m.waitFor(t, "the replica to be back", func() (bool, string) {
		r = m.sendPow(t, k.Method, k.Path, k.Token, k.Key, k.Pow, nil)
		return r.Status != 503, r.String()
	})
	m.logf(t, "retry of %s with the replica back: %s (order %d)", k.What, r, r.Order.ID)
	// The retry learns the outcome of the first attempt, which the order's
	// deadline tells: it was won before the stop.
	m.grabAnswered(t, g, u, k, r, m.ref.Grab(g, u, true), before.Add(-modelWait), m.a.Clock.Now())
}

// check is run before the first step and after every step: what the server
// reads back must be the model's, at once (each read is served by the
// process that made the change).
func (m *modelMachine) check(t *rapid.T) {
	var net int64
	for g, id := range m.goods {
		gd := m.ref.Goods[g]
		left := m.ref.Remaining(g)
		// The live stock read: from this process's memory, which its own
		// changes update before they answer.
		r := m.send(t, "GET", fmt.Sprintf("/api/goods/%d", id), "", "", nil)
		if got := r.Goods; r.Status != 200 || got.Remaining != left || got.Stock != gd.Stock || got.LimitPerUser != gd.Limit || got.Title != gd.Title || r.PowBits != gd.PowBits {
			m.fail(t, r.Raw, "goods#%d reads %s: remaining %d, stock %d, limit %d, title %q, pow_bits %d; the model says remaining %d, stock %d, limit %d, title %q, pow_bits %d",
				g, r, got.Remaining, got.Stock, got.LimitPerUser, got.Title, r.PowBits, left, gd.Stock, gd.Limit, gd.Title, gd.PowBits)
		}
		st := m.stats(t, g)
		if st.Remaining+st.Unpaid+st.Paid != st.Stock || st.Stock != gd.Stock {
			m.fail(t, "", "goods#%d's units are not conserved: remaining %d + unpaid %d + paid %d != stock %d (the goods' stock %d)",
				g, st.Remaining, st.Unpaid, st.Paid, st.Stock, gd.Stock)
		}
		want := modelStats{Remaining: left, Unpaid: m.ref.Count(g, "unpaid"), Paid: m.ref.Count(g, "paid"), Expired: m.ref.Count(g, "expired"),
			Cancelled: m.ref.Count(g, "cancelled"), RevenueCents: m.ref.NetCents(g), NetCents: m.ref.NetCents(g)}
		got := modelStats{Remaining: st.Remaining, Unpaid: st.Unpaid, Paid: st.Paid, Expired: st.Expired, Cancelled: st.Cancelled, Failed: st.Failed,
			RevenueCents: st.RevenueCents, DiscountCents: st.DiscountCents, NetCents: st.NetCents}
		if got != want {
			m.fail(t, "", "goods#%d's figures are %+v; the model's are %+v", g, got, want)
		}
		net += st.NetCents
	}
	m.places(t)
	// Money: what was paid less what was refunded is the sale's net figure.
	if m.ref.PaidCents-m.ref.RefundedCents != net {
		m.fail(t, "", "paid %d - refunded %d != the goods' net %d", m.ref.PaidCents, m.ref.RefundedCents, net)
	}
	var listedPaid int64
	units := map[int64]map[int64]*modelOrder{} // goods → unit → the order holding it
	for u, s := range m.shoppers {
		r := m.send(t, "GET", "/api/me/orders", s.Token, "", nil)
		paid, problem := m.shopperOrders(u, r, units)
		if problem != "" {
			m.fail(t, r.Raw, "%s", problem)
		}
		listedPaid += paid
	}
	if listedPaid != net {
		m.fail(t, "", "the shoppers' paid orders add up to %d cents, the goods' net to %d", listedPaid, net)
	}
}

// shopperOrders checks shopper u's orders as read (r): every order the
// model has for them listed as the model has it, no other, none over the
// limit, and no unit held twice across the shoppers (units, which takes the
// units of a read found right). It answers what the paid orders add up to,
// or the first problem found.
func (m *modelMachine) shopperOrders(u int, r modelReply, units map[int64]map[int64]*modelOrder) (paid int64, problem string) {
	if r.Status != 200 {
		return 0, fmt.Sprintf("shopper#%d's orders: %s", u, r)
	}
	listed := map[int64]bool{}
	held := map[int64]int64{}
	mine := map[int64]map[int64]*modelOrder{}
	for _, lo := range r.Orders {
		o := m.ref.Find(lo.ID)
		switch {
		case lo.UserID != m.shoppers[u].ID:
			return 0, fmt.Sprintf("shopper#%d's orders list %s of another user", u, m.ref.Name(lo.ID))
		case o == nil || o.Shopper != u:
			return 0, fmt.Sprintf("shopper#%d's orders list %s, which no grab of theirs won", u, m.ref.Name(lo.ID))
		case lo.Status != o.Status || lo.GoodsID != m.goods[o.Goods] || lo.AmountCents != o.Amount:
			return 0, fmt.Sprintf("shopper#%d's orders list order#%d as %s for %d cents (of goods#%d: %v); the model says %s for %d",
				u, o.N, lo.Status, lo.AmountCents, o.Goods, lo.GoodsID == m.goods[o.Goods], o.Status, o.Amount)
		}
		listed[lo.ID] = true
		if lo.Status == "paid" {
			paid += lo.PaidCents
		}
		if !holds(lo.Status) {
			continue
		}
		held[lo.GoodsID]++
		gd := m.ref.Goods[o.Goods]
		other := units[lo.GoodsID][lo.Unit]
		if other == nil {
			other = mine[lo.GoodsID][lo.Unit]
		}
		if other != nil {
			return 0, fmt.Sprintf("goods#%d's unit %d is held by order#%d and order#%d", o.Goods, lo.Unit, other.N, o.N)
		} else if lo.Unit < 1 || lo.Unit > gd.Stock {
			return 0, fmt.Sprintf("order#%d holds unit %d of goods#%d, out of its stock of %d", o.N, lo.Unit, o.Goods, gd.Stock)
		}
		if mine[lo.GoodsID] == nil {
			mine[lo.GoodsID] = map[int64]*modelOrder{}
		}
		mine[lo.GoodsID][lo.Unit] = o
	}
	for _, o := range m.ref.Orders {
		if o.Shopper == u && !listed[o.ID] {
			return 0, fmt.Sprintf("shopper#%d's order#%d (%s) is not in their orders", u, o.N, o.Status)
		}
	}
	for g, id := range m.goods {
		if held[id] > m.ref.Goods[g].Limit {
			return 0, fmt.Sprintf("shopper#%d holds %d of goods#%d, over the limit of %d", u, held[id], g, m.ref.Goods[g].Limit)
		}
	}
	for g, us := range mine {
		if units[g] == nil {
			units[g] = map[int64]*modelOrder{}
		}
		for unit, o := range us {
			units[g][unit] = o
		}
	}
	return paid, ""
}

// modelStats are the figures of a goods the checker compares.
type modelStats struct {
	Remaining, Unpaid, Paid, Expired, Cancelled, Failed int64
	RevenueCents, DiscountCents, NetCents               int64
}

// modelStatsJSON is the merchant's stats of a goods as far as the checker reads them.
type modelStatsJSON struct {
	statsJSON
	RevenueCents  int64 `json:"revenue_cents"`
	DiscountCents int64 `json:"discount_cents"`
	NetCents      int64 `json:"net_cents"`
	Pending       int64 `json:"pending"`
}

func (m *modelMachine) stats(t *rapid.T, g int) modelStatsJSON {
	t.Helper()
	r := m.send(t, "GET", fmt.Sprintf("/api/admin/goods/%d/stats", m.goods[g]), m.merchant, "", nil)
	var st modelStatsJSON
	if r.Status != 200 {
		m.fail(t, r.Raw, "goods#%d's stats: %s", g, r)
	}
	if err := json.Unmarshal([]byte(r.Raw), &st); err != nil {
		m.fail(t, r.Raw, "goods#%d's stats: %v", g, err)
	}
	return st
}

// settle ends a sequence: the store catches up with the sale (the flush
// leaves no figure apart from Redis's), and the desk, which reads the
// store, lists every order as the model has it and the same money.
func (m *modelMachine) settle(t *rapid.T) {
	m.waitFor(t, "the store and the desk to agree with the sale", func() (bool, string) {
		for g := range m.goods {
			st := m.stats(t, g)
			// Remaining is synced to the store every few seconds on its
			// own schedule (GoodsSyncEvery), not by the flush: left out.
			for _, d := range st.Drift {
				if d != "remaining" {
					return false, fmt.Sprintf("goods#%d drifts in %s", g, strings.Join(st.Drift, ", "))
				}
			}
			if st.Pending != 0 {
				return false, fmt.Sprintf("goods#%d has changes waiting for the flush", g)
			}
			r := m.send(t, "GET", fmt.Sprintf("/api/admin/orders?goods_id=%d&limit=200", m.goods[g]), m.merchant, "", nil)
			if r.Status != 200 {
				return false, fmt.Sprintf("the desk's orders of goods#%d: %s", g, r)
			}
			var net int64
			n := 0
			for _, o := range m.ref.Orders {
				if o.Goods == g {
					n++
				}
			}
			for _, d := range r.Orders {
				o := m.ref.Find(d.ID)
				if o == nil || o.Goods != g || o.Status != d.Status || d.UserID != m.shoppers[o.Shopper].ID {
					return false, fmt.Sprintf("the desk lists %s of goods#%d as %s", m.ref.Name(d.ID), g, d.Status)
				}
				if d.Status == "paid" {
					net += d.PaidCents
				}
			}
			if len(r.Orders) != n || net != m.ref.NetCents(g) {
				return false, fmt.Sprintf("the desk lists %d orders of goods#%d, paid %d net; the model has %d, paid %d", len(r.Orders), g, net, n, m.ref.NetCents(g))
			}
		}
		return true, ""
	})
	t.Logf("settled after %d steps: %s", m.step, m.ref.String())
}

// waitFor waits on the server's asynchronous work until cond holds, or
// fails after modelWait with what cond last said.
func (m *modelMachine) waitFor(t *rapid.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(modelWait)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			m.fail(t, "", "timed out after %s waiting for %s: %s", modelWait, what, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
