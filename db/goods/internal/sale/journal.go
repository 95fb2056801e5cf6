package sale

import (
	"context"
	"sync"
	"time"
)

// PhantomWindow is how far back a process remembers the orders it
// acknowledged: well past the replication lag a failover may lose and the
// time a promotion takes.
const PhantomWindow = 30 * time.Second

// Acked is one order this process acknowledged.
type Acked struct {
	at      time.Time
	GoodsID int64
	Rec     string // the grab's order record
}

// ackJournal is the orders this process acknowledged lately, oldest first.
type ackJournal struct {
	mu   sync.Mutex
	acks []Acked
}

// maxJournal bounds the journal (about 100 bytes an entry): past it the
// oldest go first, as a very busy process keeps less than PhantomWindow.
const maxJournal = 1 << 20

// add journals orders acknowledged at once (a batch's wins), oldest first.
func (j *ackJournal) add(as ...Acked) {
	if len(as) == 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	last := as[len(as)-1]
	drop := 0
	for drop < len(j.acks) && (last.at.Sub(j.acks[drop].at) > PhantomWindow || len(j.acks)-drop+len(as) > maxJournal) {
		drop++
	}
	// The slice moves forward; append copies what is left to a new array
	// when the old one is full, and the dropped ones go with the old.
	j.acks = append(j.acks[drop:], as...)
}

// UpTo returns the orders acknowledged at or before t.
func (j *ackJournal) UpTo(t time.Time) []Acked {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Acked
	for _, a := range j.acks {
		if a.at.After(t) {
			break
		}
		out = append(out, a)
	}
	return out
}

// lost tells every process's watcher that Redis lost goods state (lostKey).
func (s *Sale) lost(ctx context.Context) {
	if err := s.Redis.Incr(ctx, LostKey).Err(); err != nil {
		s.Log.Warn("count a loss of goods state in Redis", "err", err)
	}
}
