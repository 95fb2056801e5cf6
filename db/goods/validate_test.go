package goods

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
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
		{"huge stock", func(g *Input) { g.Stock = model.GoodsStock.Max + 1 }, "stock: must be at most 1,000,000", 1},
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
		{"lines in description", func(g *Input) { g.Description = new("Fast.\r\nSmall.\n\t- 5G") }, "", 1},
		{"NUL in description", func(g *Input) { g.Description = new("Fast\x00") }, "description: must not contain control characters (found U+0000)", 1},
		{"negative limit", func(g *Input) { g.LimitPerUser = -1 }, "limit_per_user: must not be negative", 0},
		{"huge limit", func(g *Input) { g.LimitPerUser = 1001 }, "limit_per_user: must be at most 1000", 0},
		{"long description", func(g *Input) { g.Description = new(strings.Repeat("é", 2001)) }, "description: is longer than 2000 characters", 1},
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

// Every value a client can send in a field that may be left out reaches
// the validator, which refuses the bad ones: none of them means "left out".
func TestValidateOptionalFields(t *testing.T) {
	ok := Input{SlotID: 1, Title: "Phone", PriceCents: 100, SeckillPriceCents: 50, Stock: 10}
	for _, tc := range []struct {
		name string
		edit func(*Input)
		want string // "field: message" pairs, sorted; "" when valid
	}{
		{"all left out", func(*Input) {}, ""},
		{"queue rate 0: automatic", func(g *Input) { g.QueueRate = new(0) }, ""},
		{"queue rate at most", func(g *Input) { g.QueueRate = new(int(model.QueueRate.Max)) }, ""},
		{"queue rate -1", func(g *Input) { g.QueueRate = new(-1) }, "queue_rate: must be 0 (the server's measured capacity) to 100000 shoppers a second"},
		{"queue rate -2", func(g *Input) { g.QueueRate = new(-2) }, "queue_rate: must be 0 (the server's measured capacity) to 100000 shoppers a second"},
		{"queue rate over", func(g *Input) { g.QueueRate = new(int(model.QueueRate.Max) + 1) }, "queue_rate: must be 0 (the server's measured capacity) to 100000 shoppers a second"},
		{"pow bits 0: off", func(g *Input) { g.PowBits = new(0) }, ""},
		{"pow bits 24", func(g *Input) { g.PowBits = new(24) }, ""},
		{"pow bits -1", func(g *Input) { g.PowBits = new(-1) }, "pow_bits: must be 0 (off) to 24"},
		{"pow bits 25", func(g *Input) { g.PowBits = new(25) }, "pow_bits: must be 0 (off) to 24"},
		{"admission 10 s", func(g *Input) { g.AdmissionSeconds = new(int(model.AdmissionSeconds.Min)) }, ""},
		{"admission an hour", func(g *Input) { g.AdmissionSeconds = new(int(model.AdmissionSeconds.Max)) }, ""},
		{"admission 0", func(g *Input) { g.AdmissionSeconds = new(0) }, "admission_seconds: must be 10 to 3600 seconds"},
		{"admission -1", func(g *Input) { g.AdmissionSeconds = new(-1) }, "admission_seconds: must be 10 to 3600 seconds"},
		{"admission 9 s", func(g *Input) { g.AdmissionSeconds = new(9) }, "admission_seconds: must be 10 to 3600 seconds"},
		{"admission over an hour", func(g *Input) { g.AdmissionSeconds = new(3601) }, "admission_seconds: must be 10 to 3600 seconds"},
		{"mode queue", func(g *Input) { g.Mode = new(model.ModeQueue) }, ""},
		{"mode raffle", func(g *Input) { g.Mode = new(model.ModeRaffle) }, ""},
		{"mode first come", func(g *Input) { g.Mode = new(model.ModeFirstCome) }, ""},
		{"mode empty", func(g *Input) { g.Mode = new("") }, "mode: must be first_come, queue or raffle"},
		{"mode unknown", func(g *Input) { g.Mode = new("auction") }, "mode: must be first_come, queue or raffle"},
		{"mode in capitals", func(g *Input) { g.Mode = new("QUEUE") }, "mode: must be first_come, queue or raffle"},
		{"shards 1", func(g *Input) { g.Shards = new(1) }, ""},
		{"shards 8", func(g *Input) { g.Shards = new(int(model.GoodsShards.Max)) }, ""},
		{"shards 0", func(g *Input) { g.Shards = new(0) }, "shards: must be 1–8"},
		{"shards -1", func(g *Input) { g.Shards = new(-1) }, "shards: must be 1–8"},
		{"shards 9", func(g *Input) { g.Shards = new(9) }, "shards: must be 1–8"},
		{"shards over the stock", func(g *Input) { g.Stock, g.Shards = 2, new(3) }, "shards: must not be more than the stock"},
		{"entry start zero time", func(g *Input) { g.Mode, g.EntryStartAt = new(model.ModeRaffle), new(time.Time{}) }, "entry_start_at: is out of range"},
		{"entry start year 10000", func(g *Input) {
			g.Mode, g.EntryStartAt = new(model.ModeRaffle), new(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))
		}, "entry_start_at: is out of range"},
		{"every fair-sale field at once", func(g *Input) {
			g.Mode, g.QueueRate, g.AdmissionSeconds, g.PowBits, g.Shards, g.EntryStartAt = new("lottery"), new(-1), new(0), new(25), new(0), new(time.Time{})
		}, "admission_seconds: must be 10 to 3600 seconds; entry_start_at: is out of range; mode: must be first_come, queue or raffle; " +
			"pow_bits: must be 0 (off) to 24; queue_rate: must be 0 (the server's measured capacity) to 100000 shoppers a second; shards: must be 1–8"},
	} {
		in := ok
		tc.edit(&in)
		if got := fieldString(Validate(&in)); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// A raffle's entry window opens before its sale's start, when it closes;
// the check joins the validator's findings, so one answer names them all.
func TestCheckEntryWindow(t *testing.T) {
	start := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		mode  string
		entry time.Time
		want  string
	}{
		{"opens before the start", model.ModeRaffle, start.Add(-time.Hour), ""},
		{"opens a moment before", model.ModeRaffle, start.Add(-time.Millisecond), ""},
		{"opens at the start", model.ModeRaffle, start, "entry_start_at: must be before the sale starts"},
		{"opens after the start", model.ModeRaffle, start.Add(time.Minute), "entry_start_at: must be before the sale starts"},
		{"not a raffle: not an entry window", model.ModeQueue, start.Add(time.Minute), ""},
	} {
		in := Input{Mode: new(tc.mode), EntryStartAt: new(tc.entry)}
		f := db.FieldErrors{}
		checkEntryWindow(f, &in, start)
		if got := fieldString(f); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	// Added to what the validator found, not instead of it.
	in := Input{Mode: new(model.ModeRaffle), QueueRate: new(-1), EntryStartAt: new(start)}
	f := db.FieldErrors{"queue_rate": "must be 0 (the server's measured capacity) to 100000 shoppers a second"}
	checkEntryWindow(f, &in, start)
	if len(f) != 2 {
		t.Errorf("both fields: got %v", f)
	}
}

// Left out, a field takes its default on create and its current value on
// update; a value given, even 0 or "", is kept for the validator.
func TestLeftOutFields(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	show := func(in Input) string {
		entry := "none"
		if in.EntryStartAt != nil {
			entry = in.EntryStartAt.Sub(now).String()
		}
		return fmt.Sprintf("shards=%d mode=%q rate=%d admission=%d entry=%s", *in.Shards, *in.Mode, *in.QueueRate, *in.AdmissionSeconds, entry)
	}
	in := Input{}
	withDefaults(&in, now)
	if got, want := show(in), `shards=1 mode="first_come" rate=0 admission=120 entry=none`; got != want {
		t.Errorf("create, all left out: got %s, want %s", got, want)
	}
	in = Input{Mode: new(model.ModeRaffle)}
	withDefaults(&in, now)
	if got, want := show(in), `shards=1 mode="raffle" rate=0 admission=120 entry=0s`; got != want {
		t.Errorf("create a raffle: got %s, want %s", got, want)
	}
	in = Input{Shards: new(0), Mode: new(""), QueueRate: new(-1), AdmissionSeconds: new(0)}
	withDefaults(&in, now)
	if got, want := show(in), `shards=0 mode="" rate=-1 admission=0 entry=none`; got != want {
		t.Errorf("create, all given: got %s, want %s", got, want)
	}
	entry := now.Add(-time.Hour)
	old := &model.Goods{Shards: 4, Mode: model.ModeRaffle, QueueRate: 7, AdmissionSeconds: 30, EntryStartAt: &entry}
	in = Input{}
	withUnchanged(&in, old, now)
	if got, want := show(in), `shards=4 mode="raffle" rate=7 admission=30 entry=-1h0m0s`; got != want {
		t.Errorf("update, all left out: got %s, want %s", got, want)
	}
	in = Input{QueueRate: new(0), Mode: new(model.ModeQueue)}
	withUnchanged(&in, &model.Goods{Shards: 2, Mode: model.ModeFirstCome, QueueRate: 7, AdmissionSeconds: 30}, now)
	if got, want := show(in), `shards=2 mode="queue" rate=0 admission=30 entry=none`; got != want {
		t.Errorf("update, rate 0: got %s, want %s", got, want)
	}
}

func fieldString(f db.FieldErrors) string {
	if err := f.Err(); err != nil {
		return db.ErrorMessage(err)
	}
	return ""
}
