package views

import (
	"context"
	"strings"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/views/i18n"
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

// roleLabel is an account's role on its badge: "Merchant". In Chinese the
// role's own word ("Merchant" alone is the menu's link to the merchant pages).
func roleLabel(ctx context.Context, role string) string {
	if i18n.Of(ctx) == i18n.En {
		return stateLabel(role)
	}
	return T(ctx, role)
}

// roleOption is a role as the new-account form offers it: its code in
// English ("merchant"), its word in Chinese.
func roleOption(ctx context.Context, role string) string { return T(ctx, role) }

// driftWords name the figures where live and recorded differ
// ("remaining, paid"), in the reader's language.
func driftWords(ctx context.Context, drift []string) string {
	words := make([]string, len(drift))
	for i, d := range drift {
		words[i] = T(ctx, d)
	}
	if i18n.Of(ctx) == i18n.Zh {
		return strings.Join(words, "、")
	}
	return strings.Join(words, ", ")
}
