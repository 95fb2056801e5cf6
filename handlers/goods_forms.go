package handlers

import (
	"errors"
	"strconv"
	"strings"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views"
)

// slotFormInput parses a posted slot form; what cannot be parsed becomes a field error.
func slotFormInput(form views.SlotForm, tzOffset string) (goods.SlotInput, db.FieldErrors) {
	errs := db.FieldErrors{}
	in := goods.SlotInput{Title: form.Title, Rehearsal: form.Rehearsal}
	off := tzOffsetMinutes(tzOffset)
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
func goodsFormInput(form views.GoodsForm, slotID int64) (goods.Input, db.FieldErrors) {
	errs := db.FieldErrors{}
	in := goods.Input{SlotID: slotID, Title: form.Title, Description: new(form.Description)}
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
	// A blank field is left out: the default on create, unchanged on
	// update. Whatever is typed is the service's to check.
	optional := func(name, raw string) *int {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			return nil
		}
		v, err := strconv.Atoi(raw)
		if err != nil {
			errs[name] = "must be a whole number"
		}
		return &v
	}
	// The expected demand stands for a shard count; a number typed in the
	// advanced field wins over it.
	if d := strings.TrimSpace(form.Demand); d != "" {
		n, ok := views.ShardsForDemand(d)
		if !ok {
			errs["demand"] = "must be normal, hot or very hot"
		}
		in.Shards = &n
	}
	if n := optional("shards", form.Shards); n != nil {
		in.Shards = n
	}
	var pow int64
	count("pow_bits", form.PowBits, &pow, 0)
	// A form sends every field: an unticked box is false, not left out.
	in.PowBits, in.PreregisteredOnly = new(int(min(max(pow, -1), 1000))), new(form.Preregistered)
	if m := strings.TrimSpace(form.Mode); m != "" {
		in.Mode = &m
	}
	in.QueueRate = optional("queue_rate", form.QueueRate)
	in.AdmissionSeconds = optional("admission_seconds", form.AdmissionSeconds)
	if in.Mode != nil && *in.Mode == model.ModeRaffle && strings.TrimSpace(form.EntryStartAt) != "" {
		t, err := parseLocalTime(form.EntryStartAt, tzOffsetMinutes(form.TZOffset))
		if err != nil {
			errs["entry_start_at"] = err.Error()
		}
		in.EntryStartAt = &t
	}
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
