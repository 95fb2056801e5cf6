package goods

import (
	"fmt"
	"strings"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods/sale"
	"github.com/seckill/seckill/db/model"
)

// Bounds on what a merchant may enter for a slot or goods; a slot's window
// is bounded by db.MaxSlotLength and db.MaxScheduleAhead, as every sale window is.
const (
	MaxStock         = 1_000_000
	MaxLimitPerUser  = 1_000
	MaxPriceCents    = 100_000_000 // one million in the currency
	MaxTitleLength   = 100
	MaxDescriptionLn = 2_000
)

// SlotInput is what a merchant enters for a time slot.
type SlotInput struct {
	Title   string
	StartAt time.Time
	EndAt   time.Time
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
type Input struct {
	SlotID            int64
	Title             string
	Description       string
	PriceCents        int64
	SeckillPriceCents int64
	Stock             int64
	LimitPerUser      int64
	// Shards is how many Redis buckets the stock is split into (see
	// shards.go), 1 to MaxShards; 0 means 1 on create and the current
	// count on update.
	Shards int
	// PowBits is the proof of work asked of each grab, 0 (none) to
	// MaxPowBits leading zero bits; may change at any time.
	PowBits int
	// PreregisteredOnly opens the goods only to shoppers who booked its reminder.
	PreregisteredOnly bool
	// Mode is how the goods is sold (model.ModeFirstCome, ModeQueue,
	// ModeRaffle); "" means first come on create and unchanged on update.
	// It, and a raffle's EntryStartAt, change only before the sale.
	Mode string
	// QueueRate is a queue's admissions a second, 0 (the server's measured
	// capacity) to MaxQueueRate; -1 means left out: 0 on create, unchanged
	// on update. May change at any time.
	QueueRate int
	// AdmissionSeconds is how long a queue's admission is good for,
	// MinAdmissionSeconds to MaxAdmissionSeconds; 0 means the default on
	// create and unchanged on update. May change at any time.
	AdmissionSeconds int
	// EntryStartAt is when a raffle's entries open (they close at the
	// sale's start); zero means at creation on create and unchanged on update.
	EntryStartAt time.Time
}

// Bounds of the fair-sale fields.
const (
	MaxQueueRate        = 100_000
	MinAdmissionSeconds = 10
	MaxAdmissionSeconds = 3600
)

// Validate checks goods against the rules; it fills in the default limit
// and the fair-sale defaults (first come, the default admission).
func Validate(in *Input) db.FieldErrors {
	f := db.FieldErrors{}
	if in.SlotID <= 0 {
		f["slot_id"] = "must be a positive integer"
	}
	checkTitle(f, "title", in.Title)
	if p := db.TextProblem(in.Description, MaxDescriptionLn, true); p != "" {
		f["description"] = p
	}
	checkMoney(f, "price_cents", in.PriceCents)
	checkMoney(f, "seckill_price_cents", in.SeckillPriceCents)
	if f["price_cents"] == "" && f["seckill_price_cents"] == "" && in.SeckillPriceCents > in.PriceCents {
		f["seckill_price_cents"] = "must not be above the list price"
	}
	switch {
	case in.Stock < 1:
		f["stock"] = "must be at least 1"
	case in.Stock > MaxStock:
		f["stock"] = "must be at most 1,000,000"
	}
	switch {
	case in.LimitPerUser < 0:
		f["limit_per_user"] = "must not be negative"
	case in.LimitPerUser > MaxLimitPerUser:
		f["limit_per_user"] = "must be at most 1000"
	case in.LimitPerUser == 0:
		in.LimitPerUser = 1
	}
	switch {
	case in.Shards < 0 || in.Shards > sale.MaxShards:
		f["shards"] = "must be 1–8"
	case in.Shards > 0 && int64(in.Shards) > in.Stock && in.Stock >= 1:
		f["shards"] = "must not be more than the stock"
	}
	if in.PowBits < 0 || in.PowBits > model.MaxPowBits {
		f["pow_bits"] = fmt.Sprintf("must be 0 (off) to %d", model.MaxPowBits)
	}
	// Fair-sale fields left out (on an update, fairUnchanged has filled them).
	if in.Mode == "" {
		in.Mode = model.ModeFirstCome
	}
	if in.QueueRate == -1 {
		in.QueueRate = 0
	}
	if in.AdmissionSeconds == 0 {
		in.AdmissionSeconds = model.DefaultAdmissionSeconds
	}
	switch in.Mode {
	case model.ModeFirstCome, model.ModeQueue, model.ModeRaffle:
	default:
		f["mode"] = "must be first_come, queue or raffle"
	}
	if in.QueueRate < 0 || in.QueueRate > MaxQueueRate {
		f["queue_rate"] = fmt.Sprintf("must be 0 (the server's measured capacity) to %d shoppers a second", MaxQueueRate)
	}
	if in.AdmissionSeconds < MinAdmissionSeconds || in.AdmissionSeconds > MaxAdmissionSeconds {
		f["admission_seconds"] = fmt.Sprintf("must be %d to %d seconds", MinAdmissionSeconds, MaxAdmissionSeconds)
	}
	if y := in.EntryStartAt.Year(); !in.EntryStartAt.IsZero() && (y < 2000 || y > 9999) {
		f["entry_start_at"] = "is out of range"
	}
	return f
}

// fairDefaults opens a new raffle's entries from now when its merchant did not say when.
func fairDefaults(in *Input, now time.Time) {
	if in.Mode == model.ModeRaffle && in.EntryStartAt.IsZero() {
		in.EntryStartAt = now
	}
}

// fairUnchanged fills in the fair-sale fields an update leaves out from old.
func fairUnchanged(in *Input, old *model.Goods, now time.Time) {
	if in.Mode == "" {
		in.Mode = old.Mode
	}
	if in.QueueRate == -1 {
		in.QueueRate = old.QueueRate
	}
	if in.AdmissionSeconds == 0 {
		in.AdmissionSeconds = old.AdmissionSeconds
	}
	if in.EntryStartAt.IsZero() && old.EntryStartAt != nil {
		in.EntryStartAt = *old.EntryStartAt
	}
	fairDefaults(in, now)
}

// checkEntryWindow checks a raffle's entry start against its sale's start.
func checkEntryWindow(in *Input, start time.Time) error {
	if in.Mode == model.ModeRaffle && !in.EntryStartAt.Before(start) {
		return db.FieldErrors{"entry_start_at": "must be before the sale starts"}.Err()
	}
	return nil
}

// entryStartMs is the raffle's entry start as stored (nil: not a raffle).
func entryStartMs(in Input) any {
	if in.Mode != model.ModeRaffle {
		return nil
	}
	return in.EntryStartAt.UnixMilli()
}

func checkTitle(f db.FieldErrors, field, s string) {
	if strings.TrimSpace(s) == "" {
		f[field] = "is required"
	} else if p := db.TextProblem(s, MaxTitleLength, false); p != "" {
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
