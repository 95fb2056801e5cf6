package fair_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// queueGoods creates goods sold through a waiting room at rate a second,
// in a slot starting in start (it must be ahead: a mode is set before the sale).
func (e *goodsEnv) queueGoods(stock int64, rate int, start time.Duration) *model.Goods {
	e.T.Helper()
	sl := e.Slot(start, time.Hour)
	g, err := e.S.Create(e.Ctx, e.Merchant, goods.Input{SlotID: sl.ID, Title: "Queued", PriceCents: 10000,
		SeckillPriceCents: 4999, Stock: stock, LimitPerUser: 1, Mode: new(model.ModeQueue),
		QueueRate: new(rate), AdmissionSeconds: new(60)})
	if err != nil {
		e.T.Fatal(err)
	}
	return g
}

func (e *goodsEnv) join(user, goodsID int64) *model.Ticket {
	e.T.Helper()
	t, _, err := e.F.JoinQueue(e.Ctx, user, goodsID, "")
	if err != nil {
		e.T.Fatalf("user %d join the queue of goods %d: %v", user, goodsID, err)
	}
	return t
}

func (e *goodsEnv) ticket(user, goodsID int64) *model.Ticket {
	e.T.Helper()
	t, err := e.F.QueueTicket(e.Ctx, user, goodsID)
	if err != nil {
		e.T.Fatalf("user %d's ticket of goods %d: %v", user, goodsID, err)
	}
	return t
}

func (e *goodsEnv) tick(sockets fair.QueueSockets) {
	e.T.Helper()
	if err := e.F.TickQueues(e.Ctx, sockets); err != nil {
		e.T.Fatal(err)
	}
}

func (e *goodsEnv) queueStats(goodsID int64) *model.QueueStats {
	e.T.Helper()
	st, err := e.F.QueueStats(e.Ctx, e.Merchant, goodsID)
	if err != nil {
		e.T.Fatal(err)
	}
	return st
}

// 1,000 shoppers released at once into a started waiting room get 1,000
// distinct places, 1 to 1,000; joining again gives the same ticket.
func TestQueueJoinRace(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.queueGoods(10, 5, time.Minute)
	e.Clk.Advance(time.Minute) // exactly the start: nobody admitted yet
	const users = 1000
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	positions := map[int64]int64{}
	for u := int64(1); u <= users; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			tk, created, err := e.F.JoinQueue(e.Ctx, u, g.ID, "")
			if err != nil || !created || tk.State != model.TicketWaiting {
				t.Errorf("user %d: %+v created %v, %v", u, tk, created, err)
				return
			}
			mu.Lock()
			positions[u] = tk.Position
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	seen := map[int64]bool{}
	for u, p := range positions {
		if p < 1 || p > users || seen[p] {
			t.Fatalf("user %d has position %d: repeated or outside 1..%d", u, p, users)
		}
		seen[p] = true
	}
	if len(seen) != users {
		t.Fatalf("%d distinct positions, want %d", len(seen), users)
	}
	again, created, err := e.F.JoinQueue(e.Ctx, 7, g.ID, "")
	if err != nil || created || again.Position != positions[7] {
		t.Fatalf("join again: %+v created %v %v; want position %d, not created", again, created, err, positions[7])
	}
	if st := e.queueStats(g.ID); st.Joined != users || st.Admitted != 0 || st.Waiting != users {
		t.Fatalf("stats %+v", st)
	}
}

// Admissions follow the rate whoever advances them: two processes with
// their own clocks tick at will, and the admitted never exceed rate ×
// elapsed by more than one second's worth, nor fall behind it; a new rate
// counts from the next advance.
func TestQueueAdmissionRate(t *testing.T) {
	e := newGoodsEnv(t)
	const rate = 7
	g := e.queueGoods(1000, rate, time.Minute)
	e.Clk.Advance(time.Minute)
	startAt := e.Clk.Now()
	for u := int64(1); u <= 500; u++ {
		e.join(u, g.ID)
	}
	s2, clk2 := e.TwinFair()
	var wg sync.WaitGroup
	for step := 1; step <= 20; step++ {
		d := time.Duration(step) * 730 * time.Millisecond
		e.Clk.Set(startAt.Add(d))
		clk2.Set(startAt.Add(d - 300*time.Millisecond))
		wg.Add(2)
		go func() { defer wg.Done(); e.F.TickQueues(e.Ctx, nil) }()
		go func() { defer wg.Done(); s2.TickQueues(e.Ctx, nil) }()
		wg.Wait()
		got := e.queueStats(g.ID).Admitted
		want := int64(d.Seconds() * rate) // at e.Clk, counted by the stats call itself
		if got > want+rate || got < want-1 {
			t.Fatalf("after %v: %d admitted, want about %d (rate %d/s)", d, got, want, rate)
		}
	}
	// The merchant raises the rate: the next advance counts at the new one.
	old, err := e.S.Get(e.Ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	in := goods.Input{Title: old.Title, PriceCents: old.PriceCents, SeckillPriceCents: old.SeckillPriceCents, Stock: old.Stock,
		LimitPerUser: old.LimitPerUser, QueueRate: new(50)} // the rest left out: unchanged
	if _, err := e.S.Update(e.Ctx, e.Merchant, g.ID, in); err != nil {
		t.Fatal(err)
	}
	e.Clk.Advance(2 * time.Second) // past the settings' cache
	before := e.queueStats(g.ID).Admitted
	e.Clk.Advance(2 * time.Second)
	if got := e.queueStats(g.ID).Admitted - before; got != 100 {
		t.Fatalf("2 s at 50/s admitted %d, want 100", got)
	}
}

// Shoppers who join before the start are shuffled at the start: their
// places are a permutation of 1..n, recomputed by anyone from the seed the
// merchant's view publishes; later ones queue behind in order.
func TestQueueShuffleAtStart(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.queueGoods(10, 1, time.Minute)
	const early = 200
	for u := int64(1); u <= early; u++ {
		if tk := e.join(u, g.ID); tk.State != model.TicketWaiting || tk.Position != u {
			t.Fatalf("before the start user %d got %+v, want waiting at most %d", u, tk, u)
		}
	}
	if st := e.queueStats(g.ID); st.Started || st.Seed != "" {
		t.Fatalf("before the start: %+v", st)
	}
	e.Clk.Advance(time.Minute)
	late := e.join(early+1, g.ID)
	st := e.queueStats(g.ID)
	if !st.Started || st.Shuffled != early || len(st.Seed) != 64 {
		t.Fatalf("after the start: %+v", st)
	}
	if late.Position != early+1 {
		t.Fatalf("the first after the start has position %d, want %d", late.Position, early+1)
	}
	places := fair.QueuePlaces(st.Seed, early)
	got := make([]int64, early)
	identity := true
	for u := int64(1); u <= early; u++ {
		p := e.ticket(u, g.ID).Position
		if p != places[u-1]+1 {
			t.Fatalf("user %d (joined %d-th) has position %d; the seed says %d", u, u-1, p, places[u-1]+1)
		}
		got[u-1] = p
		identity = identity && p == u
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	for i, p := range got {
		if p != int64(i+1) {
			t.Fatalf("positions are not a permutation of 1..%d: %v", early, got)
		}
	}
	if identity {
		t.Fatal("the shuffle left everyone in the order they joined")
	}
	// Other seeds and sizes are permutations too.
	for _, n := range []int64{1, 2, 3, 5, 64, 65, 1000, 4097} {
		seen := make([]bool, n)
		for _, p := range fair.QueuePlaces(fmt.Sprintf("%032x", n*7919), n) {
			if p < 0 || p >= n || seen[p] {
				t.Fatalf("n=%d: place %d repeated or out of range", n, p)
			}
			seen[p] = true
		}
	}
}

// fakeSockets is a hub holding sockets of some users, recording what it sends.
type fakeSockets struct {
	mu    sync.Mutex
	users []int64
	sent  map[int64][]string
}

func (f *fakeSockets) LocalUsers() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int64(nil), f.users...)
}
func (f *fakeSockets) SendLocal(u int64, ev []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent[u] = append(f.sent[u], string(ev))
}

// take returns and forgets what user u was sent.
func (f *fakeSockets) take(u int64) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.sent[u]
	delete(f.sent, u)
	return out
}

// Only a valid admission grabs queued goods: none, a forged one, another
// shopper's, another goods', or one past its time is refused not_admitted,
// all in memory; the shopper's own while good wins. First-come goods
// ignore the header.
func TestQueueGrabNeedsAdmission(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.queueGoods(10, 10, time.Minute)
	g2 := e.queueGoods(10, 10, time.Minute)
	plain := e.LiveGoods(10, 1)
	for u := int64(1); u <= 3; u++ {
		e.join(u, g.ID)
		e.join(u, g2.ID)
	}
	_, err := e.GrabWith(1, g.ID, goods.Pass{})
	wantCode(t, "before the start", err, db.ENOTADMITTED)
	e.Clk.Advance(time.Minute + time.Second) // the start and one second: 10 admitted
	tk := e.ticket(1, g.ID)
	tk2 := e.ticket(2, g.ID)
	other := e.ticket(1, g2.ID)
	if tk.State != model.TicketAdmitted || tk.Admission == "" || tk.AdmittedUntil == nil || tk2.State != model.TicketAdmitted {
		t.Fatalf("tickets after a second at 10/s: %+v %+v", tk, tk2)
	}
	if want := e.Clk.Now().Add(60 * time.Second); !tk.AdmittedUntil.Equal(want) {
		t.Fatalf("admitted until %v, want %v (admitted now, for 60 s)", tk.AdmittedUntil, want)
	}
	forged := tk.Admission[:len(tk.Admission)-1] + string("0123456789abcdef"[(tk.Admission[len(tk.Admission)-1]-'0'+1)%16])
	for name, token := range map[string]string{"none": "", "forged": forged, "another shopper's": tk2.Admission,
		"another goods'": other.Admission, "garbage": "1.2.3.x"} {
		_, err := e.GrabWith(1, g.ID, goods.Pass{Admission: token})
		wantCode(t, name, err, db.ENOTADMITTED)
	}
	if _, err := e.GrabWith(1, g.ID, goods.Pass{Admission: tk.Admission}); err != nil {
		t.Fatalf("grab with the admission: %v", err)
	}
	if _, err := e.GrabWith(2, plain.ID, goods.Pass{Admission: tk.Admission}); err != nil {
		t.Fatalf("first-come goods with a stray header: %v", err)
	}
	e.Clk.Advance(60 * time.Second)
	_, err = e.GrabWith(2, g.ID, goods.Pass{Admission: tk2.Admission})
	wantCode(t, "past admitted_until", err, db.ENOTADMITTED)
	if tk := e.ticket(2, g.ID); tk.State != model.TicketClosed {
		t.Fatalf("an admission that went unused: %+v, want closed", tk)
	}
}

// When the last unit goes the next tick closes every ticket and tells the
// sockets; a join is then queue_closed. A unit back (a cancel) reopens the
// room at the next tick, and admissions go on from where they stood.
func TestQueueClosesWhenSoldOutAndReopens(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.queueGoods(2, 2, time.Minute)
	for u := int64(1); u <= 6; u++ {
		e.join(u, g.ID)
	}
	sockets := &fakeSockets{users: []int64{1, 2, 3, 4, 5, 6}, sent: map[int64][]string{}}
	e.tick(sockets)
	e.Clk.Advance(time.Minute + time.Second) // 2 admitted
	e.tick(sockets)
	var orders []*model.Order
	for u := int64(1); u <= 6; u++ {
		tk := e.ticket(u, g.ID)
		if tk.State != model.TicketAdmitted {
			continue
		}
		o, err := e.GrabWith(u, g.ID, goods.Pass{Admission: tk.Admission})
		if err != nil {
			t.Fatalf("user %d grab: %v", u, err)
		}
		orders = append(orders, o)
	}
	if len(orders) != 2 {
		t.Fatalf("%d admitted grabs won, want 2", len(orders))
	}
	for u := int64(1); u <= 6; u++ {
		sockets.take(u)
	}
	e.tick(sockets) // no wall clock: the tick after the sell-out closes
	for u := int64(1); u <= 6; u++ {
		if tk := e.ticket(u, g.ID); tk.State != model.TicketClosed {
			t.Fatalf("user %d after the sell-out: %+v", u, tk)
		}
		if got := sockets.take(u); len(got) != 1 || got[0] != fmt.Sprintf(`{"type":"ticket","ticket":{"goods_id":%d,"state":"closed","position":0,"eta_seconds":0}}`, g.ID) {
			t.Fatalf("user %d's socket got %v, want one closed ticket", u, got)
		}
	}
	_, _, err := e.F.JoinQueue(e.Ctx, 99, g.ID, "")
	wantCode(t, "join after the sell-out", err, db.EQUEUECLOSED)
	admitted := e.queueStats(g.ID).Admitted
	e.Clk.Advance(5 * time.Second)
	if st := e.queueStats(g.ID); st.Admitted != admitted || !st.Closed {
		t.Fatalf("closed room admitted more: %+v, had %d", st, admitted)
	}
	if _, err := e.S.CancelOrder(e.Ctx, orders[0].UserID, orders[0].ID); err != nil {
		t.Fatal(err)
	}
	e.tick(sockets)
	st := e.queueStats(g.ID)
	if st.Closed {
		t.Fatalf("a unit came back and the room stays closed: %+v", st)
	}
	waiting := 0
	for u := int64(1); u <= 6; u++ {
		if tk := e.ticket(u, g.ID); tk.State == model.TicketWaiting {
			waiting++
		}
	}
	if waiting != 4 {
		t.Fatalf("%d waiting after reopening, want 4", waiting)
	}
	e.Clk.Advance(time.Second)
	if got := e.queueStats(g.ID).Admitted; got != admitted+2 {
		t.Fatalf("a second after reopening %d admitted, want %d", got, admitted+2)
	}
	if _, _, err := e.F.JoinQueue(e.Ctx, 99, g.ID, ""); err != nil {
		t.Fatalf("join after reopening: %v", err)
	}
}

// The tick sends a socket's shopper their ticket when it changes: the
// position at most once a second, the state at once.
func TestQueueTicketEvents(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.queueGoods(10, 1, time.Minute)
	e.join(1, g.ID)
	e.join(2, g.ID)
	e.Clk.Advance(time.Minute)
	if tk := e.join(3, g.ID); tk.Position != 3 { // behind the two shuffled at the start
		t.Fatalf("joined after the start: %+v, want position 3", tk)
	}
	sockets := &fakeSockets{users: []int64{3, 42}, sent: map[int64][]string{}}
	e.tick(sockets)
	if got := sockets.take(3); len(got) != 0 {
		t.Fatalf("the join answered the ticket; the socket got %v too", got)
	}
	want := func(u int64, state string, pos int64) {
		t.Helper()
		got := sockets.take(u)
		ev := fmt.Sprintf(`"state":"%s","position":%d`, state, pos)
		if len(got) != 1 || !strings.Contains(got[0], ev) {
			t.Fatalf("user %d was sent %v, want one ticket with %s", u, got, ev)
		}
	}
	e.Clk.Advance(time.Second)
	e.tick(sockets)
	want(3, model.TicketWaiting, 2)
	if got := sockets.take(42); len(got) != 0 {
		t.Fatalf("a socket without a ticket was sent %v", got)
	}
	e.tick(sockets)
	if got := sockets.take(3); len(got) != 0 {
		t.Fatalf("nothing changed and the socket got %v", got)
	}
	// User 42 joins through another process: its socket here is found by the tick.
	other := fairOver(e.S.Backend)
	other.PowKey = e.F.PowKey // the server's secret, as every process of one server has
	if _, _, err := other.JoinQueue(e.Ctx, 42, g.ID, ""); err != nil {
		t.Fatal(err)
	}
	e.Clk.Advance(2 * time.Second) // goods.queueNoneAgain
	e.tick(sockets)
	want(42, model.TicketWaiting, 1)
	got := sockets.take(3)
	tk := e.ticket(3, g.ID)
	if tk.State != model.TicketAdmitted || len(got) != 1 || !strings.Contains(got[0], `"state":"admitted"`) || !strings.Contains(got[0], tk.Admission) {
		t.Fatalf("admitted (%+v): sent %v", tk, got)
	}

	// At 10 a second the position changes every tenth of a second; it is
	// sent at most once a second.
	fast := e.queueGoods(10, 10, time.Minute)
	e.Clk.Advance(time.Minute)
	for u := int64(100); u < 130; u++ {
		e.join(u, fast.ID)
	}
	sockets.users = append(sockets.users, 129)
	e.tick(sockets)
	sockets.take(129)
	e.Clk.Advance(500 * time.Millisecond)
	e.tick(sockets)
	if got := sockets.take(129); len(got) != 0 {
		t.Fatalf("half a second after the last ticket: %v", got)
	}
	e.Clk.Advance(500 * time.Millisecond)
	e.tick(sockets)
	want(129, model.TicketWaiting, 20)
}

// A new process over the same Redis (a restart) finds every place as it was.
func TestQueueRestartKeepsPlaces(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.queueGoods(10, 1, time.Minute)
	for u := int64(1); u <= 20; u++ {
		e.join(u, g.ID)
	}
	e.Clk.Advance(time.Minute + 3*time.Second)
	before := map[int64]model.Ticket{}
	for u := int64(1); u <= 20; u++ {
		before[u] = *e.ticket(u, g.ID)
	}
	restarted := fairOver(e.S.Backend)
	restarted.PowKey = e.F.PowKey
	for u := int64(1); u <= 20; u++ {
		got, err := restarted.QueueTicket(e.Ctx, u, g.ID)
		if err != nil {
			t.Fatal(err)
		}
		if b := before[u]; got.State != b.State || got.Position != b.Position || got.Admission != b.Admission {
			t.Fatalf("user %d after a restart: %+v, before %+v", u, got, b)
		}
	}
	if _, err := restarted.QueueTicket(e.Ctx, 21, g.ID); db.ErrorCode(err) != db.ENOTFOUND {
		t.Fatalf("one who never joined: %v, want not_found", err)
	}
}

// 100 shoppers in a room that has let 50 in grab at once, each with their
// own admission (none for those still waiting) and with a neighbour's:
// exactly the 50 admitted win, once each.
func TestQueueGrabRace(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.queueGoods(1000, 50, time.Minute)
	e.Clk.Advance(time.Minute)
	const users = 100
	for u := int64(1); u <= users; u++ {
		e.join(u, g.ID)
	}
	e.Clk.Advance(time.Second)
	tokens := map[int64]string{}
	admitted := 0
	for u := int64(1); u <= users; u++ {
		if tk := e.ticket(u, g.ID); tk.State == model.TicketAdmitted {
			tokens[u] = tk.Admission
			admitted++
		}
	}
	if admitted != 50 {
		t.Fatalf("%d admitted after a second at 50/s, want 50", admitted)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := map[int64]int{}
	for u := int64(1); u <= users; u++ {
		for _, token := range []string{tokens[u], tokens[u%users+1]} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := e.GrabWith(u, g.ID, goods.Pass{Admission: token})
				switch db.ErrorCode(err) {
				case "":
					mu.Lock()
					won[u]++
					mu.Unlock()
				case db.ENOTADMITTED, db.ELIMITREACHED:
				default:
					t.Errorf("user %d: %v", u, err)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	if len(won) != 50 {
		t.Fatalf("%d shoppers won, want the 50 admitted", len(won))
	}
	for u, n := range won {
		if tokens[u] == "" || n != 1 {
			t.Fatalf("user %d (admission %q) won %d times", u, tokens[u], n)
		}
	}
}

// TestQueueRejoinAfterUnusedAdmission: a shopper whose admission went
// unused joins again at the back of the line (behind one who joined after
// the start), once however many of their joins race, and is admitted again
// in turn; looking the ticket up never moves it.
func TestQueueRejoinAfterUnusedAdmission(t *testing.T) {
	e := newGoodsEnv(t)
	g := e.queueGoods(10, 1, time.Minute) // one admission a second, each good for 60 s
	for u := int64(1); u <= 3; u++ {
		e.join(u, g.ID)
	}
	e.Clk.Advance(time.Minute + 3*time.Second) // the start and three seconds: all three admitted
	if tk := e.ticket(1, g.ID); tk.State != model.TicketAdmitted {
		t.Fatalf("after three seconds at 1/s: %+v, want admitted", tk)
	}
	e.Clk.Advance(61 * time.Second) // every admission unused past its time
	if tk := e.ticket(1, g.ID); tk.State != model.TicketClosed {
		t.Fatalf("an admission that went unused: %+v, want closed", tk)
	}
	if tk := e.ticket(1, g.ID); tk.State != model.TicketClosed {
		t.Fatalf("looked up again: %+v, want still closed (a look-up does not rejoin)", tk)
	}
	if tk := e.join(4, g.ID); tk.State != model.TicketWaiting || tk.Position != 1 {
		t.Fatalf("a newcomer after the start: %+v, want waiting first", tk)
	}
	var created atomic.Int64
	tickets := make([]*model.Ticket, 20)
	var wg sync.WaitGroup
	release := make(chan struct{})
	for i := range tickets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			tk, c, err := e.F.JoinQueue(e.Ctx, 1, g.ID, "")
			if err != nil {
				t.Errorf("join again: %v", err)
				return
			}
			if c {
				created.Add(1)
			}
			tickets[i] = tk
		}()
	}
	close(release)
	wg.Wait()
	if created.Load() != 1 {
		t.Fatalf("%d of 20 racing joins after a lapse made a new ticket, want 1", created.Load())
	}
	for _, tk := range tickets {
		if tk == nil || tk.State != model.TicketWaiting || tk.Position != 2 {
			t.Fatalf("rejoined: %+v, want waiting second (behind the newcomer)", tk)
		}
	}
	e.Clk.Advance(time.Second)
	if tk := e.ticket(1, g.ID); tk.State != model.TicketWaiting || tk.Position != 1 {
		t.Fatalf("after one admission: %+v, want waiting first", tk)
	}
	e.Clk.Advance(time.Second)
	tk := e.ticket(1, g.ID)
	if tk.State != model.TicketAdmitted || tk.Admission == "" {
		t.Fatalf("after two admissions: %+v, want admitted", tk)
	}
	if _, err := e.GrabWith(1, g.ID, goods.Pass{Admission: tk.Admission}); err != nil {
		t.Fatalf("grab with the new admission: %v", err)
	}
	if tk := e.ticket(2, g.ID); tk.State != model.TicketClosed {
		t.Fatalf("a lapsed shopper who did not join again: %+v, want closed", tk)
	}
}
