package coupon

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// Limits of a coupon template.
const (
	DefaultValidDays     = 7
	userCouponIDMultiple = 100_000_000 // > model.CouponStock.Max, so (template, unit) → ID is one to one
)

// NormaliseInput fills defaults (limit 1, 7 valid days), trims the
// title and drops sub-second parts of times, then checks every rule.
func NormaliseInput(in *model.CouponInput, now time.Time) error {
	fe := db.FieldErrors{}
	in.Title = strings.TrimSpace(in.Title)
	if in.LimitPerUser == 0 {
		in.LimitPerUser = 1
	}
	if in.ValidDays == 0 {
		in.ValidDays = DefaultValidDays
	}
	in.GrabStartAt = in.GrabStartAt.Truncate(time.Second).UTC()
	in.GrabEndAt = in.GrabEndAt.Truncate(time.Second).UTC()
	if n := int64(utf8.RuneCountInString(in.Title)); !model.CouponTitle.Has(n) {
		addField(fe, "title", fmt.Sprintf("must be %d–%d characters", model.CouponTitle.Min, model.CouponTitle.Max))
	} else if p := db.TextProblem(in.Title, int(model.CouponTitle.Max), false); p != "" {
		addField(fe, "title", p)
	}
	switch in.Kind {
	case model.CouponAmountOff:
		if in.Value < model.CouponAmountCents.Min {
			addField(fe, "value", fmt.Sprintf("must be at least %s cent for an amount off", model.Text(model.CouponAmountCents.Min)))
		} else if in.Value > model.CouponAmountCents.Max {
			addField(fe, "value", fmt.Sprintf("must be at most %s cents for an amount off", model.Text(model.CouponAmountCents.Max)))
		}
	case model.CouponPercentOff:
		if !model.CouponPercent.Has(in.Value) {
			addField(fe, "value", fmt.Sprintf("must be %d–%d for a percentage off", model.CouponPercent.Min, model.CouponPercent.Max))
		}
	default:
		addField(fe, "kind", "must be amount_off or percent_off")
	}
	if in.MinSpendCents < model.CouponMinSpend.Min {
		addField(fe, "min_spend_cents", "must not be negative")
	} else if in.MinSpendCents > model.CouponMinSpend.Max {
		addField(fe, "min_spend_cents", fmt.Sprintf("must be at most %s cents", model.Text(model.CouponMinSpend.Max)))
	}
	if in.Kind == model.CouponAmountOff && in.MinSpendCents > 0 && in.Value > in.MinSpendCents {
		addField(fe, "value", "must not exceed the minimum spend")
	}
	for _, c := range []struct {
		field string
		n     int64
		b     model.Bound
	}{{"stock", in.Stock, model.CouponStock}, {"limit_per_user", in.LimitPerUser, model.CouponLimitPerUser}, {"valid_days", int64(in.ValidDays), model.CouponValidDays}} {
		if !c.b.Has(c.n) {
			addField(fe, c.field, fmt.Sprintf("must be %s–%s", model.Text(c.b.Min), model.Text(c.b.Max)))
		}
	}
	checkWindow(fe, in.GrabStartAt, in.GrabEndAt, now)
	return fe.Err()
}

// NormaliseWindow checks a new grab window for an existing template.
func NormaliseWindow(start, end *time.Time, now time.Time) error {
	fe := db.FieldErrors{}
	*start, *end = start.Truncate(time.Second).UTC(), end.Truncate(time.Second).UTC()
	checkWindow(fe, *start, *end, now)
	return fe.Err()
}

// checkWindow bounds a grab window as a slot is bounded: it ends after it
// starts and after now, lasts at most MaxSlotLength and opens within
// MaxScheduleAhead.
func checkWindow(fe db.FieldErrors, start, end, now time.Time) {
	startOK := !start.IsZero() && start.Year() >= 2000 && start.Year() <= 9999
	if !startOK {
		addField(fe, "grab_start_at", "must be an RFC 3339 time")
	} else if start.After(now.Add(db.MaxScheduleAhead)) {
		addField(fe, "grab_start_at", "must be within a year from now")
	}
	if end.IsZero() || end.Year() < 2000 || end.Year() > 9999 {
		addField(fe, "grab_end_at", "must be an RFC 3339 time")
	} else if !end.After(start) {
		addField(fe, "grab_end_at", "must be after the grab start")
	} else if startOK && end.Sub(start) > db.MaxSlotLength {
		addField(fe, "grab_end_at", "a grab window lasts at most 7 days")
	} else if !end.After(now) {
		addField(fe, "grab_end_at", "must be in the future")
	}
}

// State says where now falls in the grab window [start, end).
func State(start, end, now time.Time) string {
	switch {
	case now.Before(start):
		return model.CouponUpcoming
	case now.Before(end):
		return model.CouponLive
	}
	return model.CouponEnded
}

// UserCouponID is the ID of the unit-th coupon grabbed from a template,
// decided in Redis so the flush can write it again harmlessly.
func UserCouponID(couponID, unit int64) int64 { return couponID*userCouponIDMultiple + unit }

// TemplateOf is the template a user coupon's ID was made from (UserCouponID).
func TemplateOf(userCouponID int64) int64 { return userCouponID / userCouponIDMultiple }

// ValidUntil is when a coupon grabbed at grabbedAt stops being usable.
func ValidUntil(grabbedAt time.Time, days int) time.Time {
	return grabbedAt.UTC().AddDate(0, 0, days)
}

// addField keeps the first problem found with a field.
func addField(fe db.FieldErrors, field, msg string) {
	if _, ok := fe[field]; !ok {
		fe[field] = msg
	}
}
