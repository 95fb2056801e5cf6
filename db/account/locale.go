package account

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/lifecycle"
	"github.com/seckill/seckill/db/rdb"
)

// Locale is the language tag the account picked ("" when it has picked
// none): from memory when s.Locales follows the picks (a web process),
// else from the store.
func (s *Service) Locale(ctx context.Context, userID int64) (string, error) {
	if s.Locales == nil {
		return s.readLocale(ctx, userID)
	}
	if tag, ok := s.Locales.m.Load(userID); ok {
		return tag.(string), nil
	}
	gen := s.Locales.gen.Load()
	s.Locales.Reads.Add(1)
	tag, err := s.readLocale(ctx, userID)
	if err == nil {
		s.Locales.keep(userID, tag, gen)
	}
	return tag, err
}

func (s *Service) readLocale(ctx context.Context, userID int64) (string, error) {
	var tag string
	err := s.SQL.R.QueryRowContext(ctx, `SELECT locale FROM users WHERE id = ?`, userID).Scan(&tag)
	if errors.Is(err, sql.ErrNoRows) {
		return "", db.Errorf(db.ENOTFOUND, "user not found")
	}
	return tag, err
}

// SetLocale keeps the language tag the account picked and tells every web
// process (LocaleChannel), this one at once. The caller checks that it is
// one the shop speaks.
func (s *Service) SetLocale(ctx context.Context, userID int64, tag string) error {
	if len(tag) > 16 {
		return db.Errorf(db.EINVALID, "locale: at most 16 characters")
	}
	if _, err := s.SQL.W.ExecContext(ctx, `UPDATE users SET locale = ? WHERE id = ?`, tag, userID); err != nil {
		return err
	}
	if s.Locales != nil {
		s.Locales.drop(userID)
	}
	if err := s.Redis.Publish(ctx, rdb.PerDatabase(s.Redis, LocaleChannel), strconv.FormatInt(userID, 10)).Err(); err != nil {
		return fmt.Errorf("announce the language pick: %w", err)
	}
	return nil
}

// Locales are the accounts' picked languages as a web process keeps them
// in memory, so a signed-in reader's language costs no look-up: each is
// read from the store once, then kept until a pick announced on
// LocaleChannel (SetLocale, on any process) drops it. A message lost in a
// pub/sub reconnect is made good by dropping everything on the
// resubscription, and every Refresh as a backstop. How stale a pick may be
// on another process: the time its message takes, at most Refresh.
type Locales struct {
	// Refresh is how often everything kept is dropped and read again (0: ten minutes).
	Refresh time.Duration
	Log     *slog.Logger
	// Reads counts the picks read from the store: one an account until a
	// pick or a drop.
	Reads atomic.Int64

	rdb      redis.UniversalClient
	m        sync.Map     // user ID → the tag the account picked ("" none)
	held     atomic.Int64 // entries of m, about
	gen      atomic.Int64 // raised by every drop: a read that began before one is not kept
	follower *rdb.Follower
	loop     *lifecycle.Loop // follows the channel (Loop)
}

// LocaleChannel carries each account's new pick (its user ID) to every web process.
const LocaleChannel = "seckill:locales"

// localesMax bounds what a process keeps: past it, everything is dropped
// (a bound, not an eviction policy).
const localesMax = 1 << 16

// NewLocales follows the picks announced through rdb; Open subscribes,
// Loop follows, Close stops.
func NewLocales(rdb redis.UniversalClient) *Locales {
	l := &Locales{rdb: rdb, Log: slog.Default()}
	l.loop = lifecycle.New("locales", func(ctx context.Context) { l.follower.Run(ctx) })
	return l
}

// Open subscribes to the picks announced from now on; Close undoes it.
func (l *Locales) Open(ctx context.Context) error {
	f, err := rdb.Follow(ctx, l.rdb, LocaleChannel)
	if err != nil {
		return fmt.Errorf("language picks: %w", err)
	}
	refresh := l.Refresh
	if refresh <= 0 {
		refresh = 10 * time.Minute
	}
	// A lost message is made good by dropping everything: on a
	// resubscription, and every Refresh.
	f.Gap, f.Every, f.Tick = l.dropAll, refresh, func(context.Context) { l.dropAll() }
	f.Message = func(payload string) {
		id, err := strconv.ParseInt(payload, 10, 64)
		if err != nil {
			l.Log.Warn("bad language pick message", "payload", payload)
			l.dropAll()
			return
		}
		l.drop(id)
	}
	l.follower = f
	return nil
}

// Loop follows the picks announced after Open until stopped (by Close at
// the latest). Main starts it.
func (l *Locales) Loop() *lifecycle.Loop { return l.loop }

// Close stops following the picks and forgets what was kept.
func (l *Locales) Close() {
	if l.follower == nil {
		return
	}
	l.loop.Stop()
	l.follower.Close()
	l.follower = nil
	l.dropAll()
}

// keep remembers the user's pick as read when the generation was gen,
// unless a drop came since (the read may be older than the pick it announced).
func (l *Locales) keep(userID int64, tag string, gen int64) {
	if l.held.Load() >= localesMax {
		l.dropAll()
		return
	}
	if l.gen.Load() != gen {
		return
	}
	if _, loaded := l.m.LoadOrStore(userID, tag); !loaded {
		l.held.Add(1)
	}
	if l.gen.Load() != gen { // a drop raced the store: undo it
		l.m.Delete(userID)
	}
}

func (l *Locales) drop(userID int64) {
	l.gen.Add(1)
	if _, ok := l.m.LoadAndDelete(userID); ok {
		l.held.Add(-1)
	}
}

func (l *Locales) dropAll() {
	l.gen.Add(1)
	l.m.Clear()
	l.held.Store(0)
}
