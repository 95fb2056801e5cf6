package views

import (
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

// hiddenValue is the form value that flips an item's hidden flag.
func hiddenValue(hidden bool) string {
	if hidden {
		return "0"
	}
	return "1"
}
