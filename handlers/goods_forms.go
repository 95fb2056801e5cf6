package handlers

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/views"
)

// parseLocalTime reads a datetime-local value typed in a browser whose clock
// is offsetMin minutes behind UTC (JavaScript's getTimezoneOffset).
func parseLocalTime(s string, offsetMin int) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			if layout == time.RFC3339 {
				return t.UTC(), nil
			}
			return t.Add(time.Duration(offsetMin) * time.Minute).UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("must be a date and time")
}

// slotFormInput parses a posted slot form; what cannot be parsed becomes a field error.
func slotFormInput(form views.SlotForm, tzOffset string) (db.SlotInput, db.FieldErrors) {
	errs := db.FieldErrors{}
	in := db.SlotInput{Title: form.Title}
	off, err := strconv.Atoi(tzOffset)
	if err != nil || off < -24*60 || off > 24*60 {
		off = 0
	}
	if t, err := parseLocalTime(form.StartAt, off); err == nil {
		in.StartAt = t
	} else if form.StartAt != "" {
		errs["start_at"] = err.Error()
	}
	if t, err := parseLocalTime(form.EndAt, off); err == nil {
		in.EndAt = t
	} else if form.EndAt != "" {
		errs["end_at"] = err.Error()
	}
	return in, errs
}

// goodsFormInput parses a posted goods form; what cannot be parsed becomes a field error.
func goodsFormInput(form views.GoodsForm, slotID int64) (db.GoodsInput, db.FieldErrors) {
	errs := db.FieldErrors{}
	in := db.GoodsInput{SlotID: slotID, Title: form.Title, Description: form.Description}
	money := func(name, raw string, dst *int64) {
		v, err := parseYuan(raw)
		if err != nil {
			errs[name] = err.Error()
		}
		*dst = v
	}
	money("price_cents", form.Price, &in.PriceCents)
	money("seckill_price_cents", form.SeckillPrice, &in.SeckillPriceCents)
	count := func(name, raw string, dst *int64, blank int64) {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			*dst = blank
			return
		}
		v, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			errs[name] = "must be a whole number"
		}
		*dst = v
	}
	count("stock", form.Stock, &in.Stock, 0)
	count("limit_per_user", form.Limit, &in.LimitPerUser, 1)
	return in, errs
}

// mergeFieldErrors returns the field errors of err added to parse errors, and
// the message for a failure that belongs to no field.
func mergeFieldErrors(parse db.FieldErrors, err error) (db.FieldErrors, string) {
	out := db.FieldErrors{}
	for k, v := range parse {
		out[k] = v
	}
	if err == nil {
		return out, ""
	}
	var f *db.InvalidFields
	if errors.As(err, &f) {
		for k, v := range f.Fields {
			if _, seen := out[k]; !seen {
				out[k] = v
			}
		}
		return out, ""
	}
	return out, db.ErrorMessage(err)
}
