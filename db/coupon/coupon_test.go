package coupon_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/dbtest"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
	"github.com/seckill/seckill/db/sqldb"
)

// testService is a coupon service on this test's Redis and SQLite, with an
// Asynq client and inspector on the same Redis, the inbox it writes to, and a
// merchant to own templates.
type testService struct {
	*coupon.Service
	inbox    *inbox.Service
	redis    *rdb.Redis
	merchant int64
}

func newService(t testing.TB) *testService {
	t.Helper()
	r, sq := dbtest.Redis(t), dbtest.DB(t)
	b := backend.New(sq, r.Client)
	b.Tasks = asynq.NewClientFromRedisClient(r.Client)
	b.Queue = asynq.NewInspectorFromRedisClient(r.Client)
	cs := &testService{Service: &coupon.Service{Backend: b, Settings: sqlSettings{sq}}, inbox: &inbox.Service{Backend: b}, redis: r}
	cs.merchant = insertUsers(t, sq, "shop", 1)[0]
	return cs
}

// sqlSettings reads reminder addresses straight from the users table, as the
// account area stores them.
type sqlSettings struct{ sql *sqldb.DB }

func (s sqlSettings) UserSettings(ctx context.Context, userID int64) (model.Settings, error) {
	var st model.Settings
	err := s.sql.R.QueryRowContext(ctx, `SELECT email, webhook_url FROM users WHERE id = ?`, userID).Scan(&st.Email, &st.WebhookURL)
	return st, err
}

// setEmail stores the user's email address for reminders.
func setEmail(t testing.TB, cs *testService, userID int64, email string) {
	t.Helper()
	if _, err := cs.SQL.W.Exec(`UPDATE users SET email = ? WHERE id = ?`, email, userID); err != nil {
		t.Fatal(err)
	}
}

// insertUsers adds n accounts straight into the store (no password hashing,
// one COPY on PostgreSQL) and returns their IDs in order.
func insertUsers(t testing.TB, sq *sqldb.DB, prefix string, n int) []int64 {
	t.Helper()
	ctx := context.Background()
	tag := fmt.Sprintf("%s_%d_", prefix, time.Now().UnixNano()%1e9)
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = []any{tag + strconv.Itoa(i), "x", "user", int64(1893456000000)}
	}
	byName := make(map[string]int64, n)
	err := sq.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := sq.InsertRows(ctx, tx, "users", []string{"username", "password_hash", "role", "created_ms"}, rows); err != nil {
			return err
		}
		res, err := tx.QueryContext(ctx, `SELECT id, username FROM users WHERE username LIKE ?`, tag+"%")
		if err != nil {
			return err
		}
		defer res.Close()
		for res.Next() {
			var id int64
			var name string
			if err := res.Scan(&id, &name); err != nil {
				return err
			}
			byName[name] = id
		}
		return res.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for i := range ids {
		if ids[i] = byName[tag+strconv.Itoa(i)]; ids[i] == 0 {
			t.Fatalf("user %s%d not found after the insert", tag, i)
		}
	}
	return ids
}

// users adds n accounts for the test.
func (cs *testService) users(t testing.TB, prefix string, n int) []int64 {
	t.Helper()
	return insertUsers(t, cs.SQL, prefix, n)
}

func (cs *testService) create(t testing.TB, stock, limit int64, start, end time.Time) *model.Coupon {
	t.Helper()
	c, err := cs.Create(context.Background(), cs.merchant, model.CouponInput{
		Title: "Ten off", Kind: model.CouponAmountOff, Value: 1000, MinSpendCents: 5000, Stock: stock, LimitPerUser: limit,
		GrabStartAt: start, GrabEndAt: end})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (cs *testService) dbCount(t testing.TB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := cs.SQL.R.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// 1,000 users race for 100 coupons with a limit of one: exactly 100 win,
// each a different user, and exactly those 100 reach SQLite.
func TestCouponGrabRace(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	c := cs.create(t, 100, 1, now.Add(-time.Minute), now.Add(time.Hour))
	users := cs.users(t, "racer", 1000)

	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	ids := map[int64]bool{}
	release := make(chan struct{})
	for _, uid := range users {
		wg.Add(1)
		go func(uid int64) {
			defer wg.Done()
			<-release
			uc, err := cs.Grab(ctx, uid, c.ID, "")
			mu.Lock()
			defer mu.Unlock()
			codes[db.ErrorCode(err)]++
			if err == nil {
				ids[uc.ID] = true
			}
		}(uid)
	}
	close(release)
	wg.Wait()
	if codes[""] != 100 || codes[db.ESOLDOUT] != 900 || len(ids) != 100 {
		t.Fatalf("outcomes %v with %d distinct coupon IDs, want 100 grabbed and 900 sold_out", codes, len(ids))
	}
	got, err := cs.Get(ctx, c.ID)
	if err != nil || got.Remaining != 0 {
		t.Fatalf("remaining = %v (%v), want 0", got, err)
	}
	if err := cs.FlushAll(ctx, cs.FlushGrabs); err != nil {
		t.Fatal(err)
	}
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ?`, c.ID); n != 100 {
		t.Fatalf("%d coupons in SQLite, want 100", n)
	}
	if n := cs.dbCount(t, `SELECT COUNT(DISTINCT user_id) FROM user_coupons WHERE coupon_id = ?`, c.ID); n != 100 {
		t.Fatalf("%d distinct users hold coupons, want 100", n)
	}
}

// One user firing 60 grabs at once with a limit of 3 gets exactly 3.
func TestCouponGrabLimitUnderParallelGrabs(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	c := cs.create(t, 100, 3, now.Add(-time.Minute), now.Add(time.Hour))
	uid := cs.users(t, "greedy", 1)[0]
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	release := make(chan struct{})
	for i := 0; i < 60; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			_, err := cs.Grab(ctx, uid, c.ID, "")
			mu.Lock()
			codes[db.ErrorCode(err)]++
			mu.Unlock()
		}()
	}
	close(release)
	wg.Wait()
	if codes[""] != 3 || codes[db.ELIMITREACHED] != 57 {
		t.Fatalf("outcomes %v, want 3 grabbed and 57 limit_reached", codes)
	}
	if got, _ := cs.Get(ctx, c.ID); got.Remaining != 97 {
		t.Fatalf("remaining = %d, want 97", got.Remaining)
	}
	cs.FlushAll(ctx, cs.FlushGrabs)
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM user_coupons WHERE user_id = ?`, uid); n != 3 {
		t.Fatalf("user holds %d coupons in SQLite, want 3", n)
	}
}

// A grab sent again with the same request ID (go-redis retrying a lost
// reply) answers the same coupon and takes no second unit.
func TestCouponGrabRequestIDIsRemembered(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	c := cs.create(t, 10, 5, now.Add(-time.Minute), now.Add(time.Hour))
	uid := cs.users(t, "retry", 1)[0]
	a, err := cs.Grab(ctx, uid, c.ID, "req-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := cs.Grab(ctx, uid, c.ID, "req-1")
	if err != nil || b.ID != a.ID || !b.ValidUntil.Equal(a.ValidUntil) {
		t.Fatalf("replay = %+v, %v; want the same coupon %+v", b, err, a)
	}
	if got, _ := cs.Get(ctx, c.ID); got.Remaining != 9 {
		t.Fatalf("remaining = %d, want 9", got.Remaining)
	}
	// Refusals are not remembered: they changed nothing, and memos stay bounded by the stock.
	cs.Grab(ctx, uid, 4242, "req-missing")
	full := cs.create(t, 1, 1, now.Add(-time.Minute), now.Add(time.Hour))
	cs.Grab(ctx, uid, full.ID, "")
	cs.Grab(ctx, uid, full.ID, "req-refused")
	if keys, _ := rdb.Keys(ctx, cs.redis.Client, "*req*"); len(keys) != 2 {
		t.Fatalf("memo keys %v, want only the two successful grabs", keys)
	}
	// Another user sending the same request ID is a different request.
	other := cs.users(t, "other", 1)[0]
	if o, err := cs.Grab(ctx, other, c.ID, "req-1"); err != nil || o.ID == a.ID {
		t.Fatalf("other user's grab = %+v, %v", o, err)
	}
}

func TestCouponGrabWindowAndRules(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	uid := cs.users(t, "w", 1)[0]
	soon := cs.create(t, 5, 1, now.Add(time.Hour), now.Add(2*time.Hour))
	if _, err := cs.Grab(ctx, uid, soon.ID, ""); db.ErrorCode(err) != db.ENOTSTARTED {
		t.Fatalf("grab before the window: %v, want not_started", err)
	}
	if _, err := cs.Grab(ctx, uid, 99999, ""); db.ErrorCode(err) != db.ENOTFOUND {
		t.Fatalf("grab of a missing coupon: %v, want not_found", err)
	}
	live := cs.create(t, 1, 1, now.Add(-time.Minute), now.Add(time.Hour))
	uc, err := cs.Grab(ctx, uid, live.ID, "")
	if err != nil || uc.Status != "unused" || !uc.ValidUntil.Equal(uc.GrabbedAt.AddDate(0, 0, 7)) {
		t.Fatalf("grab = %+v, %v", uc, err)
	}
	// limit_reached is reported before sold_out.
	if _, err := cs.Grab(ctx, uid, live.ID, ""); db.ErrorCode(err) != db.ELIMITREACHED {
		t.Fatalf("second grab: %v, want limit_reached", err)
	}
	u2 := cs.users(t, "w2", 1)[0]
	if _, err := cs.Grab(ctx, u2, live.ID, ""); db.ErrorCode(err) != db.ESOLDOUT {
		t.Fatalf("grab of an empty coupon: %v, want sold_out", err)
	}
	cs.Now = func() time.Time { return now.Add(3 * time.Hour) }
	if _, err := cs.Grab(ctx, u2, soon.ID, ""); db.ErrorCode(err) != db.EENDED {
		t.Fatalf("grab after the window: %v, want ended", err)
	}
}

// When Redis loses a template (an embedded Redis after a restart), the next
// grab loads it back from SQLite with the flushed grabs still counting.
func TestCouponReloadsAfterRedisLoss(t *testing.T) {
	ctx := context.Background()
	cs := newService(t)
	now := time.Now()
	c := cs.create(t, 5, 2, now.Add(-time.Minute), now.Add(time.Hour))
	uid := cs.users(t, "r", 1)[0]
	for i := 0; i < 2; i++ {
		if _, err := cs.Grab(ctx, uid, c.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := cs.FlushAll(ctx, cs.FlushGrabs); err != nil {
		t.Fatal(err)
	}
	rdb.FlushDB(ctx, cs.redis.Client)
	if got, _ := cs.Get(ctx, c.ID); got.Remaining != 3 {
		t.Fatalf("remaining from SQLite = %d, want 3", got.Remaining)
	}
	if _, err := cs.Grab(ctx, uid, c.ID, ""); db.ErrorCode(err) != db.ELIMITREACHED {
		t.Fatalf("grab after reload: %v, want limit_reached", err)
	}
	u2 := cs.users(t, "r2", 1)[0]
	uc, err := cs.Grab(ctx, u2, c.ID, "")
	if err != nil || uc.ID != coupon.UserCouponID(c.ID, 3) {
		t.Fatalf("grab after reload = %+v, %v; want unit 3", uc, err)
	}
	cs.FlushAll(ctx, cs.FlushGrabs)
	if n := cs.dbCount(t, `SELECT COUNT(*) FROM user_coupons WHERE coupon_id = ?`, c.ID); n != 3 {
		t.Fatalf("%d coupons in SQLite, want 3", n)
	}
	mine, err := cs.UserCoupons(ctx, uid)
	if err != nil || len(mine) != 2 || mine[0].Title != "Ten off" {
		t.Fatalf("user coupons = %v, %v", mine, err)
	}
}
