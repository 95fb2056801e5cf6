package views

import (
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// DashboardView is the merchant's start page: live and upcoming slots with
// their totals, coupons and red packets.
type DashboardView struct {
	Slots      []model.SlotSales
	Coupons    []*model.CouponStats
	RedPackets []*model.RedPacket
}

// AdminUsersView lists the accounts with the form to add one.
type AdminUsersView struct {
	Users []model.User
	Form  UserForm
}

// UserForm is the state of the new-account form.
type UserForm struct {
	Username string
	Role     string
	Errors   db.FieldErrors
	Error    string
}

// timeTag is the datetime of a <time> element, which the layout's script
// shows in the browser's zone; its text is the UTC fallback.
func timeTag(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// hiddenValue is the form value that flips an item's hidden flag.
func hiddenValue(hidden bool) string {
	if hidden {
		return "0"
	}
	return "1"
}
