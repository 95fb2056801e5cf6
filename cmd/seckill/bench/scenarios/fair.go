package scenarios

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/seckill/seckill/cmd/seckill/bench"
	"github.com/seckill/seckill/db/fair"
)

// The fair sale (issue 22, item 6): human shoppers and a fleet of bots in
// one sale, in each of the contract's modes (DESIGN §6, "Fair sales"), and
// who ends up with the units. Humans arrive spread over a window around the
// moment the sale opens to them, think, and act once; the bots fire from a
// second before at full speed and retry at once on every refusal. Then the
// fleet's request rate with and without a proof of work (fair_pow.go).
//
// It runs only when named (-scenarios fair): it takes a minute and a half of
// wall time, most of it the humans' arrival and the sales' own timing.

// FairConfig sizes the fair sale.
type FairConfig struct {
	Humans    int           // human shoppers
	Bots      int           // bots in the fleet
	Accounts  int           // accounts per bot
	Stock     int           // units of each sale
	Arrive    time.Duration // humans arrive spread over this window, centred on the sale's opening
	ThinkMin  time.Duration // a human thinks this long at least before acting
	ThinkMax  time.Duration // and at most this long
	Poll      time.Duration // a waiting human reads its ticket this often (the page's live ticket comes at most once a second)
	Wait      time.Duration // the longest a sale runs after its start (queue admissions, the draw)
	QueueRate int           // the waiting room's admissions a second (0: a tenth of the stock, so admissions take about ten seconds)
	ModePow   int           // pow_bits of the mode sales (0: none); humans and bots solve it
	PowBits   int           // pow_bits of the proof-of-work phase
	PowFor    time.Duration // the length of each proof-of-work phase
}

// defaultFairConfig is the sale: 1,000 humans and 50 bots of 20 accounts.
func defaultFairConfig() FairConfig {
	return FairConfig{Humans: 1000, Bots: 50, Accounts: 20, Stock: 400, Arrive: 10 * time.Second,
		ThinkMin: time.Second, ThinkMax: 3 * time.Second, Poll: time.Second, Wait: 30 * time.Second,
		PowBits: fair.DefaultPowBits, PowFor: 5 * time.Second}
}

// smokeFairConfig is a tiny sale with short waits, for tests.
func smokeFairConfig() FairConfig {
	return FairConfig{Humans: 20, Bots: 2, Accounts: 5, Stock: 6, Arrive: 1200 * time.Millisecond,
		ThinkMin: 100 * time.Millisecond, ThinkMax: 300 * time.Millisecond, Poll: 200 * time.Millisecond, Wait: 15 * time.Second, QueueRate: 20,
		PowBits: 8, PowFor: time.Second}
}

// FairSale is one sale of the scenario: its mode and where the humans
// arrive relative to its start.
type FairSale struct {
	Label string // the report's row
	Mode  string // the goods' mode
	late  bool   // queue: humans arrive around start_at (those after it queue behind everyone before)
	// presolve: the goods asks a proof of work, and the fleet fetches and
	// solves challenges for each account (presolveStock of them) as early
	// as the server gives them, firing the stock at the open.
	presolve bool
}

// presolveStock is how many challenges a pre-solving bot solves per account before the open.
const presolveStock = 3

var FairSales = []FairSale{
	{Label: "first_come", Mode: "first_come"},
	{Label: "queue", Mode: "queue"},
	{Label: "queue, humans around start_at", Mode: "queue", late: true},
	{Label: "raffle", Mode: "raffle"},
	{Label: "first_come, fleet pre-solves", Mode: "first_come", presolve: true},
	{Label: "queue, fleet pre-solves", Mode: "queue", presolve: true},
	{Label: "raffle, fleet pre-solves", Mode: "raffle", presolve: true},
}

// fairShopper is one account of the sale.
type fairShopper struct {
	id    int64
	token string
	addr  string // the client address, forwarded as a proxy would: a human's own, a bot's shared by its accounts
	bot   bool
}

// fairBench is the fair scenario's shoppers and connections.
type fairBench struct {
	t        *benchTarget
	cfg      FairConfig
	shoppers []fairShopper // the humans, then each bot's accounts
	client   *bench.Client // one connection per shopper, then fairCounters for set-up and counting
}

// fairCounters are the connections that count the orders after a sale.
const fairCounters = 8

// fairTimes is one sale's timeline.
type fairTimes struct {
	start      time.Time // the slot's start_at (the queue's admissions begin, the raffle's draw)
	entryStart time.Time // raffle: entries open
	centre     time.Time // the humans' arrivals are centred here
	opens      time.Time // the first moment an action is taken: an earlier human waits for it
	botsFrom   time.Time // the bots fire from here
	deadline   time.Time // nobody waits past this
}

// times lays out a sale that is set up now: it opens a few seconds later, so
// the humans' arrivals before it are real. The queue's waiting room and the
// raffle's entries open before the start; a human who arrives before a
// door can be used waits on the page for it.
func (f *fairBench) times(s FairSale, now time.Time) fairTimes {
	lead := f.cfg.Arrive/2 + time.Second // the first human arrives a second after set-up
	pre := f.cfg.Arrive/2 + f.cfg.ThinkMax + time.Second
	var tm fairTimes
	switch {
	case s.Mode == "raffle":
		tm.entryStart = now.Add(lead)
		tm.start = tm.entryStart.Add(pre) // every human has entered by then
		tm.centre, tm.opens, tm.botsFrom = tm.entryStart, tm.entryStart, tm.entryStart.Add(-time.Second)
	case s.Mode == "queue" && !s.late:
		tm.centre = now.Add(lead)
		tm.start = tm.centre.Add(pre) // every human has joined by then
		tm.opens, tm.botsFrom = now, tm.start.Add(-time.Second)
	case s.Mode == "queue":
		tm.start = now.Add(lead)
		tm.centre, tm.opens, tm.botsFrom = tm.start, now, tm.start.Add(-time.Second)
	default:
		tm.start = now.Add(lead)
		tm.centre, tm.opens, tm.botsFrom = tm.start, tm.start, tm.start.Add(-time.Second)
	}
	tm.deadline = tm.start.Add(f.cfg.Wait)
	return tm
}

// fairResult is what one sale gave.
type fairResult struct {
	sale          FairSale
	unavailable   string // why the server cannot run this mode ("" when it ran)
	goodsID       int64
	stock         int64
	sold          int64 // units sold (Redis: unpaid + paid)
	botUnits      int64 // orders held by bot accounts
	humanUnits    int64 // orders held by humans
	humansWon     int64 // humans holding an order
	humanLat      []time.Duration
	humanCodes    map[string]int64 // the humans' actions: "grab ok", "join queue_closed", …
	botRequests   int64
	botCodes      map[string]int64
	entries       int64 // raffle: entries the draw saw
	countFailures int64 // shoppers whose orders could not be read
	presolved     int64 // challenges the fleet solved before the open (pre-solving sales)
}

// benchFair runs the fair sale in every mode, then the proof-of-work phases, and adds the tables to r.
func benchFair(ctx context.Context, o *Options, t *benchTarget, r *bench.Report) error {
	cfg := o.Fair
	f := &fairBench{t: t, cfg: cfg}
	if err := f.seed(ctx); err != nil {
		return err
	}
	defer f.client.Close()
	r.Settings["fair"] = fmt.Sprintf("%d humans, %d bots × %d accounts, %d units a sale, pow_bits %d (sales) and %d (fleet)",
		cfg.Humans, cfg.Bots, cfg.Accounts, cfg.Stock, cfg.ModePow, cfg.PowBits)
	load0 := loadAverage()
	// The outflow first: the automatic rate aims at the most grabs this
	// process has answered in a second, which the sales below would raise
	// past what the room holds (every shopper admitted before the slowdown).
	progress(o, "fair: the waiting room's automatic outflow with slow grabs …")
	outflow, err := f.outflowPhase(ctx)
	if err != nil {
		return err
	}
	var results []*fairResult
	for _, s := range FairSales {
		progress(o, "fair: %s …", s.Label)
		res, err := f.run(ctx, s)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Label, err)
		}
		results = append(results, res)
	}
	progress(o, "fair: the fleet with and without a proof of work …")
	pow, err := f.powPhases(ctx)
	if err != nil {
		return err
	}
	f.report(r, results, pow, load0, loadAverage())
	outflowTable(r, outflow)
	return nil
}

func progress(o *Options, format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// loadAverage is the machine's 1-minute load average, as /proc/loadavg says it ("" where there is none).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	return strings.Fields(string(b))[0]
}

// seed makes the sale's accounts and opens a connection for each.
func (f *fairBench) seed(ctx context.Context) error {
	cfg := f.cfg
	if cfg.Humans < 1 || cfg.Bots < 1 || cfg.Accounts < 1 || cfg.Stock < 1 {
		return fmt.Errorf("fair: humans, bots, accounts and stock must be positive")
	}
	n := cfg.Humans + cfg.Bots*cfg.Accounts
	users, err := f.t.Accounts.SeedUsers(ctx, fmt.Sprintf("fair%d_", time.Now().UnixNano()%1_000_000), "bench-password", n)
	if err != nil {
		return fmt.Errorf("seed fair shoppers: %w", err)
	}
	for k, u := range users {
		s := fairShopper{id: u.ID, token: f.t.Tokens.Sign(u), addr: shopperAddr(1<<20 + k)}
		if k >= cfg.Humans {
			s.bot = true
			s.addr = shopperAddr(1<<21 + (k-cfg.Humans)/cfg.Accounts) // a bot's accounts share its address
		}
		f.shoppers = append(f.shoppers, s)
	}
	f.client, err = bench.NewClient(f.t.URL, n+fairCounters)
	return err
}

// call is one request of shopper w (on its own connection) with extra
// header lines, decoding a 2xx answer into out. A keep-alive connection the
// server closed while the shopper thought is dialled again once, as a browser would.
func (f *fairBench) call(w int, method, path string, headers []string, out any) (string, time.Duration) {
	return f.callAs(w, w, method, path, headers, out)
}

// callAs is call on connection conn.
func (f *fairBench) callAs(conn, w int, method, path string, headers []string, out any) (string, time.Duration) {
	s := &f.shoppers[w]
	for try := 0; ; try++ {
		began := time.Now()
		st, raw, err := f.client.DoHeaders(conn, s.addr, method, path, s.token, headers, nil)
		d := time.Since(began)
		if err != nil {
			if try == 0 {
				continue
			}
			return "transport", d
		}
		return outcome(st, raw, out), d
	}
}

// goodsView is the part of a goods answer the scenario reads.
type goodsView struct {
	Goods struct {
		ID      int64  `json:"id"`
		Mode    string `json:"mode"`
		PowBits int    `json:"pow_bits"`
	} `json:"goods"`
}

// fixture creates the sale's slot and goods through the admin API; the
// goods' answer says whether the server knows the mode.
func (f *fairBench) fixture(s FairSale, tm fairTimes, stock, powBits int) (goodsView, error) {
	slot, err := f.t.benchSlot("fair "+s.Label, tm.start.UTC().Truncate(time.Millisecond), tm.start.Add(time.Hour).UTC().Truncate(time.Second))
	if err != nil {
		return goodsView{}, err
	}
	body := map[string]any{
		"slot_id": slot, "title": "fair " + s.Label, "description": "fair-sale bench", "price_cents": 9900,
		"seckill_price_cents": 990, "stock": stock, "limit_per_user": 1, "pow_bits": powBits,
	}
	if s.Mode != "first_come" {
		body["mode"] = s.Mode
	}
	switch s.Mode {
	case "queue":
		body["queue_rate"] = f.cfg.QueueRate
		if f.cfg.QueueRate == 0 {
			body["queue_rate"] = max(1, stock/10)
		}
		body["admission_seconds"] = 120
	case "raffle":
		body["entry_start_at"] = tm.entryStart.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
	}
	var g goodsView
	code := f.t.benchCall("POST", "/api/admin/goods", f.t.admin, body, &g)
	if code != "ok" {
		if s.Mode != "first_come" && code == "invalid" {
			return g, errModeUnavailable{fmt.Sprintf("the server refused mode %q (invalid)", s.Mode)}
		}
		return g, fmt.Errorf("create goods: %s", code)
	}
	if s.Mode != "first_come" && g.Goods.Mode != s.Mode {
		return g, errModeUnavailable{fmt.Sprintf("the server's goods have no mode %q (created as %q)", s.Mode, g.Goods.Mode)}
	}
	return g, nil
}

// errModeUnavailable says the server does not run a fair-sale mode (yet).
type errModeUnavailable struct{ why string }

func (e errModeUnavailable) Error() string { return "not available on this server: " + e.why }

// run holds one sale and counts who holds its units.
func (f *fairBench) run(ctx context.Context, s FairSale) (*fairResult, error) {
	res := &fairResult{sale: s, stock: int64(f.cfg.Stock), humanCodes: map[string]int64{}, botCodes: map[string]int64{}}
	tm := f.times(s, time.Now())
	powBits := f.cfg.ModePow
	if s.presolve && powBits == 0 {
		powBits = f.cfg.PowBits
	}
	g, err := f.fixture(s, tm, f.cfg.Stock, powBits)
	var unavailable errModeUnavailable
	if errors.As(err, &unavailable) {
		res.unavailable = unavailable.Error()
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	res.goodsID = g.Goods.ID
	sale := &fairRun{f: f, s: s, tm: tm, id: g.Goods.ID, pow: g.Goods.PowBits > 0, res: res}
	if why := sale.probe(); why != "" {
		res.unavailable = "not available on this server: " + why
		return res, nil
	}

	botCtx, stopBots := context.WithCancel(ctx)
	var bots, humans sync.WaitGroup
	for w := f.cfg.Humans; w < len(f.shoppers); w++ {
		bots.Add(1)
		go func() { defer bots.Done(); sale.bot(botCtx, w) }()
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 22))
	for w := 0; w < f.cfg.Humans; w++ {
		arrive := tm.centre.Add(-f.cfg.Arrive/2 + time.Duration(rng.Int64N(int64(f.cfg.Arrive))))
		think := f.cfg.ThinkMin + time.Duration(rng.Int64N(int64(f.cfg.ThinkMax-f.cfg.ThinkMin)+1))
		humans.Add(1)
		go func() { defer humans.Done(); sale.human(ctx, w, arrive, think) }()
	}
	humans.Wait()
	if s.Mode == "raffle" {
		sale.waitDraw(ctx)
	}
	stopBots()
	bots.Wait()
	return res, f.count(ctx, res)
}
