package fair

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
)

// The waiting rooms' tick, run by every web process once a QueueTick: it
// advances each active room, opens or closes it by the stock (a sold-out
// goods closes within a tick, and reopens when units come back by expiry or
// cancel), and sends the shoppers whose sockets this process holds their
// ticket when it changed: its state at once, its position at most once a
// second. No goroutine per shopper and no pub/sub per ticket: a place never
// changes once the start has passed, so each ticket is computed here from
// the room's shared counters, with one HMGET per room for sockets whose
// holders are not known yet.

// QueueSockets is what the tick needs of this process's live hub.
type QueueSockets interface {
	// LocalUsers lists the signed-in users with a socket on this process.
	LocalUsers() []int64
	// SendLocal sends an event to the user's sockets on this process.
	SendLocal(userID int64, event []byte)
}

// queueNoneAgain is how long a local socket's user found without a ticket
// is not asked about again (one who joins through another process is seen by then).
const queueNoneAgain = 2 * time.Second

// localQueue is what this process knows of one room's shoppers with sockets here.
type localQueue struct {
	mu      sync.Mutex
	holders map[int64]*holder   // user → their ticket's facts and what they were last sent
	none    map[int64]time.Time // user → when found holding no ticket
}

type holder struct {
	j       int64
	admitAt time.Time // when their place was admitted (zero: not yet known)
	sent    model.Ticket
	sentAt  time.Time
	hasSent bool
}

func (q *queues) localOf(goodsID int64) *localQueue {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.local[goodsID]
	if l == nil {
		l = &localQueue{holders: map[int64]*holder{}, none: map[int64]time.Time{}}
		q.local[goodsID] = l
	}
	return l
}

// remember keeps what a join or a look-up told the shopper, so the tick
// does not ask again nor send the same ticket.
func (q *queues) remember(goodsID, userID, j int64, admitAt time.Time, t model.Ticket, now time.Time) {
	l := q.localOf(goodsID)
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.none, userID)
	h := l.holders[userID]
	if h == nil {
		if len(l.holders) > 1_000_000 {
			return
		}
		h = &holder{j: j}
		l.holders[userID] = h
	}
	if h.j != j { // joined again, or admitted by a priority code
		h.j, h.admitAt = j, time.Time{}
	}
	if !admitAt.IsZero() {
		h.admitAt = admitAt
	}
	h.sent, h.sentAt, h.hasSent = t, now, true
}

// capacityMeter measures the grabs this process answers a second, for
// goods whose queue_rate is 0: the peak of the last minute's seconds.
type capacityMeter struct {
	mu      sync.Mutex
	last    int64
	lastAt  time.Time
	samples [60]int64
	i       int
}

func (m *capacityMeter) sample(now time.Time, total int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.lastAt.IsZero() {
		if d := now.Sub(m.lastAt); d > 0 {
			m.samples[m.i%len(m.samples)] = int64(float64(total-m.last) / d.Seconds())
			m.i++
		}
	}
	m.last, m.lastAt = total, now
}

func (m *capacityMeter) peak() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var p int64
	for _, v := range m.samples {
		p = max(p, v)
	}
	return p
}

// RunQueues ticks the waiting rooms every QueueTick until ctx ends.
func (s *Service) RunQueues(ctx context.Context, sockets QueueSockets) {
	backend.Every(ctx, QueueTick, func() {
		if err := s.TickQueues(ctx, sockets); err != nil && ctx.Err() == nil {
			s.Log.Warn("tick the waiting rooms", "err", err)
		}
	})
}

// TickQueues advances every active waiting room once, opening or closing it
// by its stock, and sends changed tickets to the sockets (nil: none) of this process.
func (s *Service) TickQueues(ctx context.Context, sockets QueueSockets) error {
	now := s.Now()
	s.queues.meter.sample(now, s.Goods.Admitted()) // the grabs this process answered past the admission stages
	members, err := s.Redis.SMembers(ctx, queueActiveKey).Result()
	if err != nil {
		return err
	}
	type room struct {
		g   *model.Goods
		cmd *redis.Cmd
	}
	var rooms []room
	var gs []*model.Goods
	for _, m := range members {
		id, _ := strconv.ParseInt(m, 10, 64)
		g, err := s.queueGoods(ctx, id)
		if db.ErrorCode(err) == db.ENOTFOUND || (err == nil && g.Mode != model.ModeQueue) {
			s.Redis.SRem(ctx, queueActiveKey, m)
			continue
		}
		if err != nil {
			return err
		}
		c := *g
		gs = append(gs, &c)
	}
	if len(gs) == 0 {
		s.queues.paused.Store(0)
		return nil
	}
	if err := s.Goods.FillRemaining(ctx, gs); err != nil {
		return err
	}
	pipe := s.Redis.Pipeline()
	for _, g := range gs {
		// The flows first: this process's grabs counted in, and for an
		// automatic outflow the next rate (queue_outflow.go).
		r, err := s.readOutflow(ctx, g, now, false)
		if err != nil {
			return err
		}
		next := ""
		if automatic(g) {
			target := s.outflowTarget(r)
			m := s.queues.meterOf(g.ID)
			m.mu.Lock()
			m.target = target
			m.mu.Unlock()
			rate := nextRate(r.rn, target, r.bad())
			if s.SalePaused != nil && s.SalePaused() { // the operator paused the sale: admit nobody until it resumes
				rate = 0
			}
			next = strconv.FormatInt(rate, 10)
		}
		args, err := s.queueArgs(ctx, g, now, openOf(g, now))
		if err != nil {
			return err
		}
		args = append(args, next, rateEvery.Milliseconds())
		rooms = append(rooms, room{g: g, cmd: queueTickScript.Eval(ctx, pipe, []string{queueKey(g.ID), queueAdvKey(g.ID)}, args...)})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	var users []int64
	if sockets != nil {
		users = sockets.LocalUsers()
	}
	var paused int64
	for _, r := range rooms {
		vals, err := r.cmd.Slice()
		if err != nil {
			return err
		}
		v, err := parseQueueView(vals)
		if err != nil {
			return err
		}
		if automatic(r.g) && s.rateNow(r.g, v) == 0 && !v.closed && now.Before(r.g.EndAt) {
			paused++ // as QueueStats's Paused
		}
		if now.Sub(r.g.EndAt) > queueLinger {
			s.Redis.SRem(ctx, queueActiveKey, r.g.ID)
			s.queues.active.Delete(r.g.ID)
		}
		if sockets != nil {
			if err := s.pushTickets(ctx, sockets, users, r.g, v, now); err != nil {
				return err
			}
		}
	}
	s.queues.paused.Store(paused)
	return nil
}

// PausedRooms is how many open waiting rooms the health gate held at no
// outflow at this process's last tick (the metric seckill_waiting_rooms_paused).
func (s *Service) PausedRooms() int64 { return s.queues.paused.Load() }

// ticketEvent is the live event carrying a shopper's ticket.
type ticketEvent struct {
	Type   string       `json:"type"`
	Ticket model.Ticket `json:"ticket"`
}

// pushTickets sends the room's shoppers with sockets here their changed tickets.
func (s *Service) pushTickets(ctx context.Context, sockets QueueSockets, users []int64, g *model.Goods, v queueView, now time.Time) error {
	l := s.queues.localOf(g.ID)
	here := make(map[int64]bool, len(users))
	var ask []int64
	l.mu.Lock()
	for _, u := range users {
		here[u] = true
		if _, ok := l.holders[u]; ok {
			continue
		}
		if at, ok := l.none[u]; ok && now.Sub(at) < queueNoneAgain && !now.Before(at) {
			continue
		}
		ask = append(ask, u)
	}
	for u := range l.holders {
		if !here[u] {
			delete(l.holders, u)
		}
	}
	for u := range l.none {
		if !here[u] {
			delete(l.none, u)
		}
	}
	l.mu.Unlock()

	// Who among the new sockets holds a ticket.
	for len(ask) > 0 {
		batch := ask[:min(len(ask), 1000)]
		ask = ask[len(batch):]
		fields := make([]string, len(batch))
		for i, u := range batch {
			fields[i] = strconv.FormatInt(u, 10)
		}
		js, err := s.Redis.HMGet(ctx, queueUsersKey(g.ID), fields...).Result()
		if err != nil {
			return err
		}
		l.mu.Lock()
		for i, u := range batch {
			str, ok := js[i].(string)
			j, err := strconv.ParseInt(str, 10, 64)
			if !ok || err != nil {
				l.none[u] = now
				continue
			}
			l.holders[u] = &holder{j: j}
		}
		l.mu.Unlock()
	}

	// When the newly admitted were admitted.
	type lookup struct {
		h   *holder
		cmd *redis.StringSliceCmd
	}
	var looks []lookup
	pipe := s.Redis.Pipeline()
	l.mu.Lock()
	for _, h := range l.holders {
		if p := v.place(h.j); h.j >= 0 && p < v.a && h.admitAt.IsZero() && !v.closed {
			looks = append(looks, lookup{h: h, cmd: pipe.ZRangeByScore(ctx, queueAdvKey(g.ID),
				&redis.ZRangeBy{Min: "(" + strconv.FormatInt(p, 10), Max: "+inf", Count: 1})})
		}
	}
	l.mu.Unlock()
	if len(looks) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		l.mu.Lock()
		for _, lk := range looks {
			lk.h.admitAt = admitTimeOf(lk.cmd.Val(), now)
		}
		l.mu.Unlock()
	}

	type send struct {
		user int64
		t    model.Ticket
	}
	var out []send
	l.mu.Lock()
	for u, h := range l.holders {
		t := s.ticketOf(g, v, u, h.j, h.admitAt, now)
		// The place fixed at the start is news too (the page shows no
		// number before it), whatever the position reads.
		changed := !h.hasSent || t.State != h.sent.State || t.Admission != h.sent.Admission || t.Place != h.sent.Place || t.Lapsed != h.sent.Lapsed
		moved := t.Position != h.sent.Position || t.ETASeconds != h.sent.ETASeconds
		if changed || (moved && (now.Sub(h.sentAt) >= time.Second || now.Before(h.sentAt))) {
			h.sent, h.sentAt, h.hasSent = t, now, true
			out = append(out, send{user: u, t: t})
		}
	}
	l.mu.Unlock()
	for _, o := range out {
		ev, err := json.Marshal(ticketEvent{Type: "ticket", Ticket: o.t})
		if err != nil {
			return err
		}
		sockets.SendLocal(o.user, ev)
	}
	return nil
}

// QueueStats is the merchant's live view of the goods' waiting room.
func (s *Service) QueueStats(ctx context.Context, by model.Claims, goodsID int64) (*model.QueueStats, error) {
	g, err := s.Goods.Owned(ctx, by, goodsID)
	if err != nil {
		return nil, err
	}
	if err := goods.NotSoldBy(g, model.ModeQueue); err != nil {
		return nil, err
	}
	now := s.Now()
	v, err := s.advanceRoom(ctx, g, now, -1)
	if err != nil {
		return nil, err
	}
	r, err := s.readOutflow(ctx, g, now, true)
	if err != nil {
		return nil, err
	}
	_, measured := s.queueRate(g)
	st := &model.QueueStats{GoodsID: g.ID, Joined: v.n, Admitted: v.a, Waiting: v.n - v.a, Rate: s.rateNow(g, v), Measured: measured,
		Closed: v.closed || !now.Before(g.EndAt), Started: v.f >= 0}
	if v.f >= 0 {
		st.Shuffled, st.Seed = v.f, v.seed
	}
	window := HealthWindow.Seconds()
	st.InflowPerS = math.Round(float64(max(v.n-r.joinedWin, 0))/window*10) / 10
	st.OutflowPerS = math.Round(float64(max(v.a-r.admitWin, 0))/window*10) / 10
	st.NoShows = r.noShows()
	st.RateNow = st.Rate
	st.Paused = automatic(g) && st.RateNow == 0 && !st.Closed
	rate := s.etaRate(g, v)
	st.ExpectedWaitS = (st.Waiting + rate - 1) / rate
	if r.waited {
		st.ActualWaitP50S = math.Round(r.waitP50.Seconds()*10) / 10
	}
	return st, nil
}

// QueueMemory is the Redis memory the goods' waiting room holds: MEMORY
// USAGE of its keys, every field counted (the bench's bytes a waiting shopper).
func (s *Service) QueueMemory(ctx context.Context, goodsID int64) (int64, error) {
	var total int64
	for _, k := range []string{queueKey(goodsID), queueUsersKey(goodsID), queueAdvKey(goodsID)} {
		n, err := s.Redis.MemoryUsage(ctx, k, 0).Result()
		if err == redis.Nil {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("memory of waiting room %d: %w", goodsID, err)
		}
		total += n
	}
	return total, nil
}
