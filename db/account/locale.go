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
		return readLocale(ctx, s.SQL.R, userID)
	}
	return s.Locales.of(ctx, userID)
}

func readLocale(ctx context.Context, q *sql.DB, userID int64) (string, error) {
	var tag string
	err := q.QueryRowContext(ctx, `SELECT locale FROM users WHERE id = ?`, userID).Scan(&tag)
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
		s.Locales.picked(userID, tag)
	}
	if err := s.Redis.Publish(ctx, rdb.PerDatabase(s.Redis, LocaleChannel), strconv.FormatInt(userID, 10)).Err(); err != nil {
		return fmt.Errorf("announce the language pick: %w", err)
	}
	return nil
}

// Locales are the accounts' picked languages as a web process keeps them
// in memory, so that a reader's language costs no look-up. Few accounts
// ever pick one (the browser's is the default), so a process holds every
// pick the store has: read whole at Open, an account absent from it has
// picked none and is answered without a read. That is what keeps a
// refusal, written in its reader's language, as cheap as a refusal
// (issue 43: a sale's crowd is mostly accounts met once).
//
// A pick announced on LocaleChannel (SetLocale, on any process) is read
// again; a message lost in a pub/sub reconnect is made good by reading
// the whole set again on the resubscription, and every Refresh as a
// backstop. How stale a pick may be on another process: the time its
// message takes, at most Refresh.
//
// Past localesMax picks the set is not held whole: each account's pick is
// then read from the store the first time it is asked for and kept (up to
// the bound), and a message drops it.
type Locales struct {
	// Refresh is how often the whole set is read again (0: ten minutes).
	Refresh time.Duration
	Log     *slog.Logger
	// Reads counts the picks read from the store one account at a time:
	// none while the set is held whole, else one an account until a pick
	// or a drop.
	Reads atomic.Int64

	rdb      redis.UniversalClient
	sql      *sql.DB            // reads the picks
	limit    int                // localesMax (tests lower it)
	m        sync.Map           // user ID → the tag the account picked ("" none)
	held     atomic.Int64       // entries of m, about
	whole    atomic.Bool        // m holds every pick: an absent account picked none
	gen      atomic.Int64       // raised by every drop and reload: a read that began before one is not kept
	reload   sync.Mutex         // one reading of the whole set at a time
	heard    func(userID int64) // tests: called once an announced pick is taken (nil: nothing)
	follower *rdb.Follower
	loop     *lifecycle.Loop // follows the channel (Loop)
}

// LocaleChannel carries each account's new pick (its user ID) to every web process.
const LocaleChannel = "seckill:locales"

// localesMax bounds what a process keeps: past it the set is not held
// whole, and what is kept one account at a time is dropped at the bound (a
// bound, not an eviction policy).
const localesMax = 1 << 16

// localesReadTimeout bounds a read of the store made from the channel's
// loop, which has no request to end it.
const localesReadTimeout = 30 * time.Second

// NewLocales follows the picks announced through rdb, reading them from
// the store q; Open reads the set and subscribes, Loop follows, Close stops.
func NewLocales(rdb redis.UniversalClient, q *sql.DB) *Locales {
	l := &Locales{rdb: rdb, sql: q, limit: localesMax, Log: slog.Default()}
	l.loop = lifecycle.New("locales", func(ctx context.Context) { l.follower.Run(ctx) })
	return l
}

// Open subscribes to the picks announced from now on, then reads the whole
// set; Close undoes it.
func (l *Locales) Open(ctx context.Context) error {
	f, err := rdb.Follow(ctx, l.rdb, LocaleChannel)
	if err != nil {
		return fmt.Errorf("language picks: %w", err)
	}
	refresh := l.Refresh
	if refresh <= 0 {
		refresh = 10 * time.Minute
	}
	// A lost message is made good by reading everything again: on a
	// resubscription, and every Refresh.
	f.Gap, f.Every, f.Tick = func() { l.readAll(context.Background()) }, refresh, l.readAll
	f.Message = func(payload string) {
		id, err := strconv.ParseInt(payload, 10, 64)
		if err != nil {
			l.Log.Warn("bad language pick message", "payload", payload)
			l.readAll(context.Background())
			return
		}
		l.announced(id)
		if l.heard != nil {
			l.heard(id)
		}
	}
	l.follower = f
	l.readAll(ctx) // subscribed first: a pick made during the read is announced after it
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

// of answers the account's pick: from memory, with no read when the set is
// held whole; else read once and kept.
func (l *Locales) of(ctx context.Context, userID int64) (string, error) {
	gen := l.gen.Load()
	whole := l.whole.Load()
	if tag, ok := l.m.Load(userID); ok {
		return tag.(string), nil
	}
	if whole && l.gen.Load() == gen { // no reload began between: absent is no pick
		return "", nil
	}
	gen = l.gen.Load()
	l.Reads.Add(1)
	tag, err := readLocale(ctx, l.sql, userID)
	if err == nil {
		l.keep(userID, tag, gen)
	}
	return tag, err
}

// readAll reads every pick the store holds and holds the set whole, unless
// there are more than the limit or the read fails (then each account is
// read when asked for). A pick announced during the read is read again by
// its message, which comes after: the set is never older than that. A pick
// of this process's made meanwhile spoils a reading (its drop may be older
// than the read): it is read again, a few times at most.
func (l *Locales) readAll(ctx context.Context) {
	l.reload.Lock()
	defer l.reload.Unlock()
	for range 3 {
		if l.readAllOnce(ctx) {
			return
		}
	}
}

func (l *Locales) readAllOnce(ctx context.Context) (done bool) {
	l.whole.Store(false)
	l.dropAll()
	gen := l.gen.Load()
	ctx, cancel := context.WithTimeout(ctx, localesReadTimeout)
	defer cancel()
	picks, err := func() (map[int64]string, error) {
		rows, err := l.sql.QueryContext(ctx, `SELECT id, locale FROM users WHERE locale <> '' LIMIT ?`, l.limit+1)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		picks := map[int64]string{}
		for rows.Next() {
			var id int64
			var tag string
			if err := rows.Scan(&id, &tag); err != nil {
				return nil, err
			}
			picks[id] = tag
		}
		return picks, rows.Err()
	}()
	if err != nil {
		l.Log.Warn("read the language picks; each is read when asked for", "err", err)
		return true
	}
	if len(picks) > l.limit {
		return true
	}
	for id, tag := range picks {
		if _, loaded := l.m.LoadOrStore(id, tag); !loaded { // a newer pick set meanwhile stays
			l.held.Add(1)
		}
	}
	if l.gen.Load() != gen { // a drop came during the read
		return false
	}
	l.whole.Store(true)
	return true
}

// announced takes a pick announced on the channel: read again into the
// whole set, else dropped (read when next asked for).
func (l *Locales) announced(userID int64) {
	if !l.whole.Load() {
		l.drop(userID)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), localesReadTimeout)
	defer cancel()
	tag, err := readLocale(ctx, l.sql, userID)
	if err != nil {
		l.Log.Warn("read an announced language pick; each is read when asked for until the next reading of them all", "user", userID, "err", err)
		l.whole.Store(false)
		l.drop(userID)
		return
	}
	l.set(userID, tag)
}

// picked takes this process's own pick at once, before its message comes back.
func (l *Locales) picked(userID int64, tag string) {
	if l.whole.Load() {
		l.set(userID, tag)
	} else {
		l.drop(userID)
	}
}

// set holds the account's pick in the whole set.
func (l *Locales) set(userID int64, tag string) {
	if _, loaded := l.m.Swap(userID, tag); !loaded && l.held.Add(1) > int64(l.limit) {
		l.whole.Store(false)
		l.dropAll()
	}
}

// keep remembers the user's pick as read when the generation was gen,
// unless a drop came since (the read may be older than the pick it announced).
func (l *Locales) keep(userID int64, tag string, gen int64) {
	if l.held.Load() >= int64(l.limit) {
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
