package sale

import (
	"testing"
	"time"

	"github.com/seckill/seckill/db"
)

// A sold out asked before a unit came back and answered after the process
// heard of it (a late answer) does not hide the unit: the memo keeps it
// under the epoch it was asked in, which is stale. One asked after the back
// counts.
func TestLateSoldOutDoesNotHideANewerBack(t *testing.T) {
	ms := new(saleMemos)
	m := new(saleMemo)
	ms.m.Store(int64(7), m)
	now := time.Now()
	asked := m.epoch.Load() // a grab reads the epoch, then runs the script
	ms.changed(7)           // meanwhile a unit comes back and the process hears of it
	m.learn("sold_out", 1, asked, 0)
	if err := m.refusal(2, now); err != nil {
		t.Fatalf("late sold out answered from memory: %v; want a trip to Redis", err)
	}
	m.learn("sold_out", 1, m.epoch.Load(), 0)
	if err := m.refusal(2, now); err != db.ErrSoldOut {
		t.Fatalf("sold out learnt now: %v, want ErrSoldOut", err)
	}
	ms.changed(7)
	if err := m.refusal(2, now); err != nil {
		t.Fatalf("after a unit came back: %v, want a trip to Redis", err)
	}
}

// Each refusal is answered from memory in the grab script's order, and a
// shopper who won here asks Redis, which tells limit_reached from sold_out.
func TestSaleMemoAnswers(t *testing.T) {
	m := new(saleMemo)
	now := time.Now()
	m.learn("ok", 5, 0, 0)
	m.learn("sold_out", 6, 0, 0)
	m.learn("limit_reached", 4, 0, 0)
	for _, c := range []struct {
		user int64
		want error
	}{{6, db.ErrSoldOut}, {7, db.ErrSoldOut}, {5, nil}, {4, db.ErrLimitReached}} {
		if got := m.refusal(c.user, now); got != c.want {
			t.Errorf("user %d: got %v, want %v", c.user, got, c.want)
		}
	}
	m.learn("not_started", 1, 0, now.Add(time.Minute).UnixMilli())
	if got := m.refusal(9, now); got != db.ErrNotStarted {
		t.Errorf("before the start: got %v, want ErrNotStarted", got)
	}
	if got := m.refusal(9, now.Add(time.Minute)); got != db.ErrSoldOut {
		t.Errorf("at the start: got %v, want the next answer, ErrSoldOut", got)
	}
	m.learn("ended", 1, 0, 0)
	if got := m.refusal(4, now.Add(time.Minute)); got != db.ErrEnded {
		t.Errorf("ended: got %v, want ErrEnded", got)
	}
}
