package model

import (
	"fmt"

	"github.com/seckill/seckill/db"
)

// Switches are the steering switches an admin flips while running a sale;
// every process reads them from memory (db/switches).
type Switches struct {
	// SalePaused answers every grab 503 unavailable (queue places are kept).
	SalePaused bool `json:"sale_paused"`
	// LiveCharts sends the merchants' live chart samples.
	LiveCharts bool `json:"live_charts"`
	// StockPushMS is the shortest gap between two live pushes on one topic
	// (stock, counters, chart samples), in milliseconds.
	StockPushMS int `json:"stock_push_ms"`
	// PowFloorBits is the least proof of work asked of every goods' grab.
	PowFloorBits int `json:"pow_floor_bits"`
	// RemindersPaused holds reminder deliveries until unpaused.
	RemindersPaused bool `json:"reminders_paused"`
	// MerchantReadOnly refuses merchants' (not admins') changes.
	MerchantReadOnly bool `json:"merchant_read_only"`
}

// Bounds of the steering switches. DefaultStockPushMS is the live events'
// coalescing window (db/live.CoalesceWindow).
const (
	DefaultStockPushMS = 100
)

// DefaultSwitches are the switches of a sale run as usual: nothing paused,
// live charts on, stock pushed at the usual interval, no proof-of-work floor.
func DefaultSwitches() Switches {
	return Switches{LiveCharts: true, StockPushMS: DefaultStockPushMS}
}

// SwitchesChange is a change of some switches: a nil field is left as it is.
type SwitchesChange struct {
	SalePaused       *bool `json:"sale_paused"`
	LiveCharts       *bool `json:"live_charts"`
	StockPushMS      *int  `json:"stock_push_ms"`
	PowFloorBits     *int  `json:"pow_floor_bits"`
	RemindersPaused  *bool `json:"reminders_paused"`
	MerchantReadOnly *bool `json:"merchant_read_only"`
}

// SwitchChange is one switch's old and new value.
type SwitchChange struct {
	From any `json:"from"`
	To   any `json:"to"`
}

// Validate refuses a change with a value out of bounds, naming each field.
func (c SwitchesChange) Validate() error {
	fe := db.FieldErrors{}
	if c.StockPushMS != nil && !StockPushMS.Has(int64(*c.StockPushMS)) {
		fe["stock_push_ms"] = fmt.Sprintf("must be %d to %d", StockPushMS.Min, StockPushMS.Max)
	}
	if c.PowFloorBits != nil && !PowBits.Has(int64(*c.PowFloorBits)) {
		fe["pow_floor_bits"] = fmt.Sprintf("must be %d to %d", PowBits.Min, PowBits.Max)
	}
	return fe.Err()
}

// Apply returns s with the change made, and which switches it changed
// (name → old and new value); the change must be valid.
func (s Switches) Apply(c SwitchesChange) (Switches, map[string]SwitchChange) {
	changed := map[string]SwitchChange{}
	setBool := func(name string, dst *bool, v *bool) {
		if v != nil && *dst != *v {
			changed[name] = SwitchChange{*dst, *v}
			*dst = *v
		}
	}
	setInt := func(name string, dst *int, v *int) {
		if v != nil && *dst != *v {
			changed[name] = SwitchChange{*dst, *v}
			*dst = *v
		}
	}
	setBool("sale_paused", &s.SalePaused, c.SalePaused)
	setBool("live_charts", &s.LiveCharts, c.LiveCharts)
	setInt("stock_push_ms", &s.StockPushMS, c.StockPushMS)
	setInt("pow_floor_bits", &s.PowFloorBits, c.PowFloorBits)
	setBool("reminders_paused", &s.RemindersPaused, c.RemindersPaused)
	setBool("merchant_read_only", &s.MerchantReadOnly, c.MerchantReadOnly)
	return s, changed
}

// OffDefault says, one line each, which switches are not as a usual sale
// has them (the banner of the merchant pages); none when all are.
func (s Switches) OffDefault() []string {
	d := DefaultSwitches()
	var out []string
	if s.SalePaused {
		out = append(out, "The sale is paused: every grab is refused (503) until it resumes; queue places are kept.")
	}
	if !s.LiveCharts {
		out = append(out, "Live charts are off.")
	}
	if s.StockPushMS != d.StockPushMS {
		out = append(out, fmt.Sprintf("Live stock is pushed every %d ms (usually %d ms).", s.StockPushMS, d.StockPushMS))
	}
	if s.PowFloorBits != d.PowFloorBits {
		out = append(out, fmt.Sprintf("Every grab needs a proof of work of at least %d bits.", s.PowFloorBits))
	}
	if s.RemindersPaused {
		out = append(out, "Reminders are held: they go out once reminders resume.")
	}
	if s.MerchantReadOnly {
		out = append(out, "Merchants are read-only: only admins may change anything.")
	}
	return out
}
