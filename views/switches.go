package views

import (
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// SwitchesForm is the steering switches' form: the switches as set (or as
// sent), the numbers as typed, and what was wrong with them.
type SwitchesForm struct {
	Switches     model.Switches
	StockPushMS  string // as typed ("" shows Switches')
	PowFloorBits string
	Errors       db.FieldErrors
	Error        string
}

func (f SwitchesForm) stockPushMS() string {
	if f.StockPushMS != "" || f.Errors != nil {
		return f.StockPushMS
	}
	return itoa(f.Switches.StockPushMS)
}

func (f SwitchesForm) powFloorBits() string {
	if f.PowFloorBits != "" || f.Errors != nil {
		return f.PowFloorBits
	}
	return itoa(f.Switches.PowFloorBits)
}
