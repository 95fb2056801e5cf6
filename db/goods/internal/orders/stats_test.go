package orders

import (
	"slices"
	"testing"

	"github.com/seckill/seckill/db/model"
)

func TestStatsDrift(t *testing.T) {
	atRest := model.GoodsStats{Stock: 10, Remaining: 4, Unpaid: 2, Paid: 4, Expired: 1, Failed: 1, RevenueCents: 400,
		DB: model.GoodsDBStats{Stock: 4, Unpaid: 2, Paid: 4, Expired: 1, Failed: 1, RevenueCents: 400}}
	for _, tc := range []struct {
		name string
		edit func(*model.GoodsStats)
		want []string
	}{
		{"at rest", func(*model.GoodsStats) {}, []string{}},
		{"flush behind", func(s *model.GoodsStats) { s.Unpaid, s.Remaining = 3, 3 }, []string{"remaining", "unpaid"}},
		{"payment not flushed", func(s *model.GoodsStats) { s.Paid, s.Unpaid = 5, 1 }, []string{"unpaid", "paid"}},
		{"cancel not flushed", func(s *model.GoodsStats) { s.Cancelled = 1 }, []string{"cancelled"}},
		{"expiry not flushed", func(s *model.GoodsStats) { s.Expired = 2 }, []string{"expired"}},
		{"void not flushed", func(s *model.GoodsStats) { s.Failed = 2 }, []string{"failed"}},
		{"failed order missing from SQLite", func(s *model.GoodsStats) { s.DB.Failed = 0 }, []string{"failed"}},
		{"revenue apart", func(s *model.GoodsStats) { s.DB.RevenueCents = 399 }, []string{"revenue"}},
		{"coupon payment not flushed", func(s *model.GoodsStats) { s.DiscountCents = 50 }, []string{"discount"}},
		{"refused orders", func(s *model.GoodsStats) { s.DB.Conflicts = 3 }, []string{"conflicts"}},
	} {
		st := atRest
		tc.edit(&st)
		if got := StatsDrift(st); !slices.Equal(got, tc.want) {
			t.Errorf("%s: drift %v, want %v", tc.name, got, tc.want)
		}
	}
}
