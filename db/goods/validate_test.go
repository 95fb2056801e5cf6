package goods

import (
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
)

func TestValidateSlot(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	ok := SlotInput{Title: "Noon", StartAt: now.Add(time.Hour), EndAt: now.Add(3 * time.Hour)}
	for _, tc := range []struct {
		name string
		edit func(*SlotInput)
		want string // "field: message" pairs, sorted; "" when valid
	}{
		{"valid", func(*SlotInput) {}, ""},
		{"already live", func(s *SlotInput) { s.StartAt = now.Add(-time.Hour) }, ""},
		{"blank title", func(s *SlotInput) { s.Title = "  " }, "title: is required"},
		{"long title", func(s *SlotInput) { s.Title = strings.Repeat("x", 101) }, "title: is longer than 100 characters"},
		{"no start", func(s *SlotInput) { s.StartAt = time.Time{} }, "start_at: is required"},
		{"no end", func(s *SlotInput) { s.EndAt = time.Time{} }, "end_at: is required"},
		{"end before start", func(s *SlotInput) { s.EndAt = s.StartAt.Add(-time.Minute) }, "end_at: must be after the start"},
		{"end equals start", func(s *SlotInput) { s.EndAt = s.StartAt }, "end_at: must be after the start"},
		{"too long", func(s *SlotInput) { s.EndAt = s.StartAt.Add(8 * 24 * time.Hour) }, "end_at: a slot lasts at most 7 days"},
		{"over", func(s *SlotInput) { s.StartAt, s.EndAt = now.Add(-2*time.Hour), now }, "end_at: is already past"},
		{"NUL in title", func(s *SlotInput) { s.Title = "No\x00on" }, "title: must not contain control characters (found U+0000)"},
		{"newline in title", func(s *SlotInput) { s.Title = "No\non" }, "title: must be a single line"},
		{"a year ahead", func(s *SlotInput) {
			s.StartAt, s.EndAt = now.Add(db.MaxScheduleAhead), now.Add(db.MaxScheduleAhead+time.Hour)
		}, ""},
		{"too far ahead", func(s *SlotInput) {
			s.StartAt, s.EndAt = now.Add(db.MaxScheduleAhead+time.Second), now.Add(db.MaxScheduleAhead+time.Hour)
		}, "start_at: must be within a year from now"},
		{"year 9999", func(s *SlotInput) {
			s.StartAt = time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC)
			s.EndAt = s.StartAt.Add(time.Hour)
		}, "start_at: must be within a year from now"},
	} {
		in := ok
		tc.edit(&in)
		if got := fieldString(ValidateSlot(now, in)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Input{SlotID: 1, Title: "Phone", PriceCents: 100, SeckillPriceCents: 50, Stock: 10}
	for _, tc := range []struct {
		name  string
		edit  func(*Input)
		want  string
		limit int64
	}{
		{"valid, limit defaults to 1", func(*Input) {}, "", 1},
		{"free goods", func(g *Input) { g.PriceCents, g.SeckillPriceCents = 0, 0 }, "", 1},
		{"limit kept", func(g *Input) { g.LimitPerUser = 3 }, "", 3},
		{"no slot", func(g *Input) { g.SlotID = 0 }, "slot_id: must be a positive integer", 1},
		{"zero stock", func(g *Input) { g.Stock = 0 }, "stock: must be at least 1", 1},
		{"negative stock", func(g *Input) { g.Stock = -5 }, "stock: must be at least 1", 1},
		{"huge stock", func(g *Input) { g.Stock = MaxStock + 1 }, "stock: must be at most 1,000,000", 1},
		{"negative price", func(g *Input) { g.PriceCents = -1 }, "price_cents: must not be negative", 1},
		{"negative seckill price", func(g *Input) { g.SeckillPriceCents = -1 }, "seckill_price_cents: must not be negative", 1},
		{"huge price", func(g *Input) { g.PriceCents = 1 << 62 }, "price_cents: is too large", 1},
		{"top price", func(g *Input) { g.PriceCents, g.SeckillPriceCents = MaxPriceCents, MaxPriceCents }, "", 1},
		{"price over a million", func(g *Input) { g.PriceCents = MaxPriceCents + 1 }, "price_cents: is too large", 1},
		{"seckill price over a million", func(g *Input) { g.PriceCents, g.SeckillPriceCents = MaxPriceCents, MaxPriceCents+1 }, "seckill_price_cents: is too large", 1},
		{"seckill price equals list price", func(g *Input) { g.SeckillPriceCents = g.PriceCents }, "", 1},
		{"seckill price above list price", func(g *Input) { g.SeckillPriceCents = g.PriceCents + 1 }, "seckill_price_cents: must not be above the list price", 1},
		{"ESC in title", func(g *Input) { g.Title = "\x1b[2JPhone" }, "title: must not contain control characters (found U+001B)", 1},
		{"override in title", func(g *Input) { g.Title = "Phone\u202e" }, "title: must not contain control characters (found U+202E)", 1},
		{"invalid UTF-8 title", func(g *Input) { g.Title = "Ph\xffone" }, "title: is not valid UTF-8 text", 1},
		{"lines in description", func(g *Input) { g.Description = "Fast.\r\nSmall.\n\t- 5G" }, "", 1},
		{"NUL in description", func(g *Input) { g.Description = "Fast\x00" }, "description: must not contain control characters (found U+0000)", 1},
		{"negative limit", func(g *Input) { g.LimitPerUser = -1 }, "limit_per_user: must not be negative", 0},
		{"huge limit", func(g *Input) { g.LimitPerUser = 1001 }, "limit_per_user: must be at most 1000", 0},
		{"long description", func(g *Input) { g.Description = strings.Repeat("é", 2001) }, "description: is longer than 2000 characters", 1},
		{"several", func(g *Input) { g.Title, g.Stock = "", 0 }, "stock: must be at least 1; title: is required", 1},
	} {
		in := ok
		tc.edit(&in)
		got := fieldString(Validate(&in))
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
		if tc.limit != 0 && in.LimitPerUser != tc.limit {
			t.Errorf("%s: limit %d, want %d", tc.name, in.LimitPerUser, tc.limit)
		}
	}
}

func fieldString(f db.FieldErrors) string {
	if err := f.Err(); err != nil {
		return db.ErrorMessage(err)
	}
	return ""
}
