// Package switches keeps the steering switches of a running sale: durable
// in the store (one row), and in every process as a snapshot in memory that
// the hot paths read without a lock, reloaded every ReloadEvery so a change
// made on one process is in force on all within a second.
package switches

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
)

// ReloadEvery is how often each process reads the switches from the store.
const ReloadEvery = 250 * time.Millisecond

// Service reads and changes the switches.
type Service struct {
	*backend.Backend

	cur     atomic.Pointer[model.Switches]
	version atomic.Int64

	mu       sync.Mutex // the OnChange hooks and their calls
	onChange []func(model.Switches)
}

// New returns the switches over b, at their defaults until Load.
func New(b *backend.Backend) *Service {
	s := &Service{Backend: b}
	d := model.DefaultSwitches()
	s.cur.Store(&d)
	s.version.Store(-1)
	return s
}

// Current is the switches as this process last read them: no I/O, no lock.
// A nil Service is the defaults.
func (s *Service) Current() model.Switches {
	if s == nil {
		return model.DefaultSwitches()
	}
	return *s.cur.Load()
}

// OnChange calls f with the switches now, and again each time this process
// sees them change (the live events' push interval follows them). A nil
// Service's switches (the defaults) never change.
func (s *Service) OnChange(f func(model.Switches)) {
	if s == nil {
		f(model.DefaultSwitches())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChange = append(s.onChange, f)
	f(*s.cur.Load())
}

// Load reads the switches from the store into memory.
func (s *Service) Load(ctx context.Context) error {
	sw, version, err := s.read(ctx)
	if err != nil {
		return err
	}
	s.take(sw, version)
	return nil
}

// take makes sw the snapshot when version is newer than the one held.
func (s *Service) take(sw model.Switches, version int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if version <= s.version.Load() {
		return
	}
	old := *s.cur.Load()
	s.cur.Store(&sw)
	s.version.Store(version)
	if old != sw {
		for _, f := range s.onChange {
			f(sw)
		}
	}
}

// Run reloads the switches every ReloadEvery until ctx ends; a store that
// does not answer leaves the last ones read in force.
func (s *Service) Run(ctx context.Context) {
	backend.Every(ctx, ReloadEvery, func() {
		if err := s.Load(ctx); err != nil && ctx.Err() == nil {
			s.Log.Warn("reload the steering switches", "err", err)
		}
	})
}

func (s *Service) read(ctx context.Context) (model.Switches, int64, error) {
	var sw model.Switches
	var version int64
	err := s.SQL.R.QueryRowContext(ctx, `SELECT sale_paused, live_charts, stock_push_ms, pow_floor_bits, reminders_paused, merchant_read_only, version
		FROM steering_switches WHERE id = 1`).Scan(&sw.SalePaused, &sw.LiveCharts, &sw.StockPushMS, &sw.PowFloorBits, &sw.RemindersPaused, &sw.MerchantReadOnly, &version)
	if err != nil {
		return sw, 0, fmt.Errorf("read the steering switches: %w", err)
	}
	return sw, version, nil
}

// Get reads the switches from the store (and takes them into memory).
func (s *Service) Get(ctx context.Context) (model.Switches, error) {
	sw, version, err := s.read(ctx)
	if err != nil {
		return sw, err
	}
	s.take(sw, version)
	return sw, nil
}

// Set changes the switches the change names and leaves the others; an
// invalid change changes nothing. It answers the switches now and which
// changed (name → old and new), in force on this process at once and on
// every other within a second.
func (s *Service) Set(ctx context.Context, c model.SwitchesChange) (model.Switches, map[string]model.SwitchChange, error) {
	if err := c.Validate(); err != nil {
		return model.Switches{}, nil, err
	}
	for range 10 {
		cur, version, err := s.read(ctx)
		if err != nil {
			return cur, nil, err
		}
		next, changed := cur.Apply(c)
		if len(changed) == 0 {
			s.take(cur, version)
			return cur, changed, nil
		}
		res, err := s.SQL.W.ExecContext(ctx, `UPDATE steering_switches SET sale_paused = ?, live_charts = ?, stock_push_ms = ?,
			pow_floor_bits = ?, reminders_paused = ?, merchant_read_only = ?, version = version + 1, updated_ms = ?
			WHERE id = 1 AND version = ?`,
			flag(next.SalePaused), flag(next.LiveCharts), next.StockPushMS, next.PowFloorBits, flag(next.RemindersPaused), flag(next.MerchantReadOnly),
			s.Now().UnixMilli(), version)
		if err != nil {
			return cur, nil, fmt.Errorf("change the steering switches: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return cur, nil, fmt.Errorf("change the steering switches: %w", err)
		} else if n == 1 {
			s.take(next, version+1)
			return next, changed, nil
		}
		// Changed meanwhile by another admin: apply this change to theirs.
	}
	return model.Switches{}, nil, db.Errorf(db.ECONFLICT, "the steering switches keep changing; try again")
}

// flag is a boolean as the store keeps it: 0 or 1.
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}
