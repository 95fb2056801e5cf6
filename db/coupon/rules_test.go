package coupon_test

import (
	"errors"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/model"
)

func TestNormaliseInput(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	good := func() model.CouponInput {
		return model.CouponInput{Title: " Ten off ", Kind: model.CouponAmountOff, Value: 1000, MinSpendCents: 5000, Stock: 100,
			GrabStartAt: now.Add(time.Hour), GrabEndAt: now.Add(2 * time.Hour)}
	}
	in := good()
	in.GrabStartAt = in.GrabStartAt.Add(300 * time.Millisecond)
	if err := coupon.NormaliseInput(&in, now); err != nil {
		t.Fatal(err)
	}
	if in.Title != "Ten off" || in.LimitPerUser != 1 || in.ValidDays != 7 || in.GrabStartAt.Nanosecond() != 0 {
		t.Fatalf("defaults not filled: %+v", in)
	}
	tests := []struct {
		name  string
		edit  func(*model.CouponInput)
		field string
	}{
		{"empty title", func(c *model.CouponInput) { c.Title = "  " }, "title"},
		{"unknown kind", func(c *model.CouponInput) { c.Kind = "free" }, "kind"},
		{"zero amount", func(c *model.CouponInput) { c.Value = 0 }, "value"},
		{"amount above min spend", func(c *model.CouponInput) { c.Value = 6000 }, "value"},
		{"percent 0", func(c *model.CouponInput) { c.Kind, c.Value = model.CouponPercentOff, 0 }, "value"},
		{"percent 100", func(c *model.CouponInput) { c.Kind, c.Value = model.CouponPercentOff, 100 }, "value"},
		{"negative min spend", func(c *model.CouponInput) { c.MinSpendCents = -1 }, "min_spend_cents"},
		{"no stock", func(c *model.CouponInput) { c.Stock = 0 }, "stock"},
		{"too much stock", func(c *model.CouponInput) { c.Stock = model.CouponStock.Max + 1 }, "stock"},
		{"negative limit", func(c *model.CouponInput) { c.LimitPerUser = -1 }, "limit_per_user"},
		{"negative days", func(c *model.CouponInput) { c.ValidDays = -3 }, "valid_days"},
		{"no start", func(c *model.CouponInput) { c.GrabStartAt = time.Time{} }, "grab_start_at"},
		{"end before start", func(c *model.CouponInput) { c.GrabEndAt = c.GrabStartAt }, "grab_end_at"},
		{"already ended", func(c *model.CouponInput) { c.GrabStartAt, c.GrabEndAt = now.Add(-2*time.Hour), now.Add(-time.Hour) }, "grab_end_at"},
		{"NUL in title", func(c *model.CouponInput) { c.Title = "Ten\x00off" }, "title"},
		{"ESC in title", func(c *model.CouponInput) { c.Title = "\x1b[31mTen off" }, "title"},
		{"bidi override in title", func(c *model.CouponInput) { c.Title = "Ten \u202eoff" }, "title"},
		{"newline in title", func(c *model.CouponInput) { c.Title = "Ten\noff" }, "title"},
		{"amount over a million", func(c *model.CouponInput) { c.Value, c.MinSpendCents = model.CouponAmountCents.Max+1, 0 }, "value"},
		{"min spend over a million", func(c *model.CouponInput) { c.MinSpendCents = model.CouponMinSpend.Max + 1 }, "min_spend_cents"},
		{"min spend 2^62", func(c *model.CouponInput) { c.MinSpendCents = 1 << 62 }, "min_spend_cents"},
		{"min spend 2^63-1", func(c *model.CouponInput) { c.MinSpendCents = 1<<63 - 1 }, "min_spend_cents"},
		{"too many days", func(c *model.CouponInput) { c.ValidDays = int(model.CouponValidDays.Max) + 1 }, "valid_days"},
		{"limit over 1000", func(c *model.CouponInput) { c.LimitPerUser = model.CouponLimitPerUser.Max + 1 }, "limit_per_user"},
		{"window longer than a slot", func(c *model.CouponInput) { c.GrabEndAt = c.GrabStartAt.Add(db.MaxSlotLength + time.Second) }, "grab_end_at"},
		{"ends in year 9999", func(c *model.CouponInput) { c.GrabEndAt = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC) }, "grab_end_at"},
		{"opens in year 9999", func(c *model.CouponInput) {
			c.GrabStartAt = time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC)
			c.GrabEndAt = c.GrabStartAt.Add(time.Hour)
		}, "grab_start_at"},
		{"opens over a year ahead", func(c *model.CouponInput) {
			c.GrabStartAt = now.Add(db.MaxScheduleAhead + time.Second)
			c.GrabEndAt = c.GrabStartAt.Add(time.Hour)
		}, "grab_start_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := good()
			tt.edit(&in)
			err := coupon.NormaliseInput(&in, now)
			var fe *db.InvalidFields
			if !errors.As(err, &fe) || fe.Fields[tt.field] == "" {
				t.Fatalf("error = %v, want a message on %s", err, tt.field)
			}
			if db.ErrorCode(err) != db.EINVALID {
				t.Fatalf("code = %s, want invalid", db.ErrorCode(err))
			}
		})
	}
	pct := good()
	pct.Kind, pct.Value = model.CouponPercentOff, 99
	if err := coupon.NormaliseInput(&pct, now); err != nil {
		t.Fatalf("99%% off refused: %v", err)
	}
	edge := good()
	edge.Value, edge.MinSpendCents, edge.ValidDays = model.CouponAmountCents.Max, model.CouponMinSpend.Max, int(model.CouponValidDays.Max)
	edge.GrabStartAt = now.Add(db.MaxScheduleAhead)
	edge.GrabEndAt = edge.GrabStartAt.Add(db.MaxSlotLength)
	if err := coupon.NormaliseInput(&edge, now); err != nil {
		t.Fatalf("the largest allowed coupon refused: %v", err)
	}
}

func TestNormaliseWindow(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name       string
		start, end time.Time
		want       string // the field at fault, "" when valid
	}{
		{"valid", now.Add(time.Hour), now.Add(2 * time.Hour), ""},
		{"live, a week long", now.Add(-time.Hour), now.Add(db.MaxSlotLength - time.Hour), ""},
		{"end before start", now.Add(2 * time.Hour), now.Add(time.Hour), "grab_end_at"},
		{"over a week", now.Add(time.Hour), now.Add(time.Hour + db.MaxSlotLength + time.Second), "grab_end_at"},
		{"to year 9999", now.Add(time.Hour), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), "grab_end_at"},
		{"over a year ahead", now.Add(db.MaxScheduleAhead + time.Hour), now.Add(db.MaxScheduleAhead + 2*time.Hour), "grab_start_at"},
		{"no start", time.Time{}, now.Add(time.Hour), "grab_start_at"},
	} {
		start, end := tt.start, tt.end
		err := coupon.NormaliseWindow(&start, &end, now)
		var fe *db.InvalidFields
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want != "" && (!errors.As(err, &fe) || fe.Fields[tt.want] == ""):
			t.Errorf("%s: error = %v, want a message on %s", tt.name, err, tt.want)
		}
	}
	start, end := time.Time{}, now.Add(time.Hour)
	var fe *db.InvalidFields
	if err := coupon.NormaliseWindow(&start, &end, now); !errors.As(err, &fe) || fe.Fields["grab_end_at"] != "" {
		t.Errorf("a missing start also blamed the end: %v", err)
	}
}

func TestState(t *testing.T) {
	start := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	for _, tt := range []struct {
		now  time.Time
		want string
	}{
		{start.Add(-time.Second), model.CouponUpcoming},
		{start, model.CouponLive},
		{end.Add(-time.Nanosecond), model.CouponLive},
		{end, model.CouponEnded},
	} {
		if got := coupon.State(start, end, tt.now); got != tt.want {
			t.Errorf("state at %s = %s, want %s", tt.now, got, tt.want)
		}
	}
}

func TestUserCouponIDAndValidity(t *testing.T) {
	if got := coupon.UserCouponID(3, 17); got != 300000017 {
		t.Fatalf("UserCouponID(3, 17) = %d", got)
	}
	if a, b := coupon.UserCouponID(1, model.CouponStock.Max), coupon.UserCouponID(2, 1); a >= b {
		t.Fatalf("IDs of different templates overlap: %d >= %d", a, b)
	}
	if max := coupon.UserCouponID(90_000_000, model.CouponStock.Max); max >= 1<<53 {
		t.Fatalf("IDs leave the JSON-safe range: %d", max)
	}
	g := time.Date(2030, 1, 30, 8, 0, 0, 0, time.UTC)
	if got := coupon.ValidUntil(g, 7); !got.Equal(g.Add(7 * 24 * time.Hour)) {
		t.Fatalf("valid until = %s", got)
	}
	if got := model.RemindAt(g, 15); !got.Equal(g.Add(-15 * time.Minute)) {
		t.Fatalf("remind at = %s", got)
	}
}
