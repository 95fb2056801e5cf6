package goods

import (
	"fmt"
	"strings"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// Bounds on what a merchant may enter for a slot or goods; a slot's window
// is bounded by db.MaxSlotLength and db.MaxScheduleAhead, as every sale window is.
// The rest are db/model/limits.go's (GoodsStock, GoodsTitle, ...).
const MaxPriceCents = 100_000_000 // one million in the currency

// SlotInput is what a merchant enters for a time slot.
type SlotInput struct {
	Title     string
	StartAt   time.Time
	EndAt     time.Time
	Rehearsal bool // create only: a rehearsal slot (it stays one)
	// Kept names the fields an update left out: each stays as it is.
	Kept struct{ Title, StartAt, EndAt bool }
}

// ValidateSlot checks a slot against the rules at time now.
func ValidateSlot(now time.Time, in SlotInput) db.FieldErrors {
	f := db.FieldErrors{}
	checkTitle(f, "title", in.Title)
	switch {
	case in.StartAt.IsZero():
		f["start_at"] = "is required"
	case in.StartAt.Year() < 2000 || in.StartAt.Year() > 9999:
		f["start_at"] = "is out of range"
	case in.StartAt.After(now.Add(db.MaxScheduleAhead)):
		f["start_at"] = "must be within a year from now"
	}
	switch {
	case in.EndAt.IsZero():
		f["end_at"] = "is required"
	case in.EndAt.Year() < 2000 || in.EndAt.Year() > 9999:
		f["end_at"] = "is out of range"
	case f["start_at"] != "":
	case !in.EndAt.After(in.StartAt):
		f["end_at"] = "must be after the start"
	case in.EndAt.Sub(in.StartAt) > db.MaxSlotLength:
		f["end_at"] = "a slot lasts at most 7 days"
	case !in.EndAt.After(now):
		f["end_at"] = "is already past"
	}
	return f
}

// Input is what a merchant enters for goods in a slot. LimitPerUser 0 means 1.
//
// A field that may be left out is a pointer: nil means left out (the
// default on create, unchanged on update), so every value a client can
// send reaches Validate and can be refused.
type Input struct {
	SlotID int64
	Title  string
	// Description is shown under the title; nil means "" on create and
	// unchanged on update.
	Description       *string
	PriceCents        int64
	SeckillPriceCents int64
	Stock             int64
	LimitPerUser      int64
	// Shards is how many Redis buckets the stock is split into (see
	// shards.go), 1 to model.GoodsShards.Max; nil means 1 on create and the current
	// count on update.
	Shards *int
	// PowBits is the proof of work asked of each grab, 0 (none) to
	// model.PowBits.Max leading zero bits; nil means 0 on create and unchanged on
	// update. May change at any time.
	PowBits *int
	// PreregisteredOnly opens the goods only to shoppers who booked its
	// reminder; nil means false on create and unchanged on update.
	PreregisteredOnly *bool
	// Mode is how the goods is sold (model.ModeFirstCome, ModeQueue,
	// ModeRaffle); nil means first come on create and unchanged on update.
	// It, and a raffle's EntryStartAt, change only before the sale.
	Mode *string
	// QueueRate is a queue's admissions a second, 0 (the server's measured
	// capacity) to model.QueueRate.Max; nil means 0 on create and unchanged on
	// update. May change at any time.
	QueueRate *int
	// AdmissionSeconds is how long a queue's admission is good for,
	// model.AdmissionSeconds; nil means the default on
	// create and unchanged on update. May change at any time.
	AdmissionSeconds *int
	// EntryStartAt is when a raffle's entries open (they close at the
	// sale's start); nil means at creation on create and unchanged on update.
	EntryStartAt *time.Time
	// Kept names the fields above that are not pointers which an update
	// left out: each stays as it is (a field left out is unchanged).
	// Create reads them as sent (zero: refused or the default).
	Kept Kept
}

// Kept are the plain fields of Input an update leaves out.
type Kept struct{ Title, PriceCents, SeckillPriceCents, Stock, LimitPerUser bool }

// Validate checks goods against the rules and fills in the default limit.
// A field left out (nil) is not checked: Create and Update fill those in
// first (withDefaults, withUnchanged).
func Validate(in *Input) db.FieldErrors {
	f := db.FieldErrors{}
	if in.SlotID <= 0 {
		f["slot_id"] = "must be a positive integer"
	}
	checkTitle(f, "title", in.Title)
	if p := db.TextProblem(deref(in.Description), int(model.GoodsDescription.Max), true); p != "" {
		f["description"] = p
	}
	checkMoney(f, "price_cents", in.PriceCents)
	checkMoney(f, "seckill_price_cents", in.SeckillPriceCents)
	if f["price_cents"] == "" && f["seckill_price_cents"] == "" && in.SeckillPriceCents > in.PriceCents {
		f["seckill_price_cents"] = "must not be above the list price"
	}
	switch {
	case in.Stock < model.GoodsStock.Min:
		f["stock"] = fmt.Sprintf("must be at least %s", model.Text(model.GoodsStock.Min))
	case in.Stock > model.GoodsStock.Max:
		f["stock"] = fmt.Sprintf("must be at most %s", model.Text(model.GoodsStock.Max))
	}
	switch {
	case in.LimitPerUser < 0:
		f["limit_per_user"] = "must not be negative"
	case in.LimitPerUser > model.GoodsLimitPerUser.Max:
		f["limit_per_user"] = fmt.Sprintf("must be at most %s", model.Text(model.GoodsLimitPerUser.Max))
	case in.LimitPerUser == 0:
		in.LimitPerUser = 1
	}
	if n := in.Shards; n != nil {
		switch {
		case !model.GoodsShards.Has(int64(*n)):
			f["shards"] = fmt.Sprintf("must be %d–%d", model.GoodsShards.Min, model.GoodsShards.Max)
		case int64(*n) > in.Stock && in.Stock >= 1:
			f["shards"] = "must not be more than the stock"
		}
	}
	if in.PowBits != nil && !model.PowBits.Has(int64(*in.PowBits)) {
		f["pow_bits"] = fmt.Sprintf("must be 0 (off) to %d", model.PowBits.Max)
	}
	if m := in.Mode; m != nil {
		switch *m {
		case model.ModeFirstCome, model.ModeQueue, model.ModeRaffle:
		default:
			f["mode"] = "must be first_come, queue or raffle"
		}
	}
	if r := in.QueueRate; r != nil && !model.QueueRate.Has(int64(*r)) {
		f["queue_rate"] = fmt.Sprintf("must be 0 (the server's measured capacity) to %d shoppers a second", model.QueueRate.Max)
	}
	if a := in.AdmissionSeconds; a != nil && !model.AdmissionSeconds.Has(int64(*a)) {
		f["admission_seconds"] = fmt.Sprintf("must be %d to %d seconds", model.AdmissionSeconds.Min, model.AdmissionSeconds.Max)
	}
	if t := in.EntryStartAt; t != nil && (t.Year() < 2000 || t.Year() > 9999) {
		f["entry_start_at"] = "is out of range"
	}
	return f
}

// withDefaults fills in what a new goods leaves out: one shard, first
// come, the measured queue rate, the default admission, and a raffle's
// entries open from now.
func withDefaults(in *Input, now time.Time) {
	if in.Description == nil {
		in.Description = new("")
	}
	if in.PowBits == nil {
		in.PowBits = new(0)
	}
	if in.PreregisteredOnly == nil {
		in.PreregisteredOnly = new(false)
	}
	if in.Shards == nil {
		in.Shards = new(1)
	}
	if in.Mode == nil {
		in.Mode = new(model.ModeFirstCome)
	}
	if in.QueueRate == nil {
		in.QueueRate = new(0)
	}
	if in.AdmissionSeconds == nil {
		in.AdmissionSeconds = new(model.DefaultAdmissionSeconds)
	}
	entriesFrom(in, now)
}

// withUnchanged fills in what an update leaves out from old.
func withUnchanged(in *Input, old *model.Goods, now time.Time) {
	for _, k := range []struct {
		left     bool
		dst, src *int64
	}{{in.Kept.PriceCents, &in.PriceCents, &old.PriceCents}, {in.Kept.SeckillPriceCents, &in.SeckillPriceCents, &old.SeckillPriceCents},
		{in.Kept.Stock, &in.Stock, &old.Stock}, {in.Kept.LimitPerUser, &in.LimitPerUser, &old.LimitPerUser}} {
		if k.left {
			*k.dst = *k.src
		}
	}
	if in.Kept.Title {
		in.Title = old.Title
	}
	if in.Description == nil {
		in.Description = new(old.Description)
	}
	if in.PowBits == nil {
		in.PowBits = new(old.PowBits)
	}
	if in.PreregisteredOnly == nil {
		in.PreregisteredOnly = new(old.PreregisteredOnly)
	}
	if in.Shards == nil {
		in.Shards = new(max(old.Shards, 1))
	}
	if in.Mode == nil {
		in.Mode = new(old.Mode)
	}
	if in.QueueRate == nil {
		in.QueueRate = new(old.QueueRate)
	}
	if in.AdmissionSeconds == nil {
		in.AdmissionSeconds = new(old.AdmissionSeconds)
	}
	if in.EntryStartAt == nil && old.EntryStartAt != nil {
		in.EntryStartAt = new(*old.EntryStartAt)
	}
	entriesFrom(in, now)
}

// entriesFrom opens a raffle's entries from now when its merchant did not say when.
func entriesFrom(in *Input, now time.Time) {
	if in.Mode != nil && *in.Mode == model.ModeRaffle && in.EntryStartAt == nil {
		in.EntryStartAt = new(now)
	}
}

// checkEntryWindow adds to f a raffle's entry window that does not end
// after it starts: its entries open before its sale's start, when they close.
func checkEntryWindow(f db.FieldErrors, in *Input, start time.Time) {
	if f["entry_start_at"] == "" && isRaffle(in) && in.EntryStartAt != nil && !in.EntryStartAt.Before(start) {
		f["entry_start_at"] = "must be before the sale starts"
	}
}

func isRaffle(in *Input) bool { return in.Mode != nil && *in.Mode == model.ModeRaffle }

// entryStartMs is the raffle's entry start as stored (nil: not a raffle).
func entryStartMs(in *Input) any {
	if !isRaffle(in) || in.EntryStartAt == nil {
		return nil
	}
	return in.EntryStartAt.UnixMilli()
}

func checkTitle(f db.FieldErrors, field, s string) {
	if strings.TrimSpace(s) == "" {
		f[field] = "is required"
	} else if p := db.TextProblem(s, int(model.GoodsTitle.Max), false); p != "" {
		f[field] = p
	}
}

func checkMoney(f db.FieldErrors, field string, cents int64) {
	switch {
	case cents < 0:
		f[field] = "must not be negative"
	case cents > MaxPriceCents:
		f[field] = "is too large"
	}
}

// NotSoldBy refuses a call of one sale mode's (a queue join, a raffle
// entry, their merchant views) on goods sold in another: 409 conflict.
func NotSoldBy(g *model.Goods, mode string) error {
	if g.Mode == mode {
		return nil
	}
	how := map[string]string{model.ModeQueue: "through a waiting room", model.ModeRaffle: "by a raffle"}[mode]
	return db.Errorf(db.ECONFLICT, "goods %d is not sold %s (its mode is %s)", g.ID, how, g.Mode)
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
