// Package views holds the templ components of every HTML page. Components
// take plain structs, never a request or a store.
package views

import (
	"net/url"

	"github.com/seckill/seckill/db/model"
)

// Page is what the layout needs on every page.
type Page struct {
	Title string
	User  *PageUser
	Flash string
	// FlashKind is FlashSuccess (green) or FlashError (red).
	FlashKind string
	// FlashPlace names the form the flash answers, shown beside it by
	// FlashAt; "" shows it at the top of the page.
	FlashPlace  string
	CSRF        string
	MonitorPath string
	// Path is the page's own path (no query: nothing a link planted), where the language switch
	// comes back to.
	Path string
	// Switches are the steering switches in force (the merchants' banner,
	// the live charts); nil: the defaults.
	Switches *model.Switches
	// FetchOwn: the page is made once for every signed-in shopper (their
	// name and token spliced in per request), so it holds none of their
	// own orders or reminders: the page's script fetches them from the API
	// (static/goods.js, static/remind_picker.js).
	FetchOwn bool
}

// switches are the steering switches the page shows.
func (p Page) switches() model.Switches {
	if p.Switches == nil {
		return model.DefaultSwitches()
	}
	return *p.Switches
}

// liveCharts reports whether the merchant pages draw live charts.
func (p Page) liveCharts() bool { return p.switches().LiveCharts }

// steering is what the merchants' banner says: the switches an admin has
// set off their defaults, for staff only.
func (p Page) steering() []string {
	if !p.IsStaff() {
		return nil
	}
	return p.switches().OffDefault()
}

// Kinds of a flash message.
const (
	FlashSuccess = "success"
	FlashError   = "error"
)

// Places of a flash beside its form (Page.FlashPlace).
const (
	PlaceImage     = "image"      // a goods' picture form
	PlaceControls  = "controls"   // end sale now, hide and show
	PlacePassword  = "password"   // the password change in Settings
	PlaceSettings  = "settings"   // the reminder addresses in Settings
	PlaceCheckout  = "checkout"   // the checkout's Pay form
	PlaceGoodsEdit = "goods-edit" // a goods' edit form
	PlaceSlotEdit  = "slot-edit"  // a slot's edit form
	PlaceRehearsal = "rehearsal"  // a rehearsal slot's delete form
	PlaceGoodsAdd  = "goods-add"  // a slot's add-goods form
	PlaceWindow    = "window"     // a coupon's grab window form
)

// PlaceOrder is the place of one order's row in My orders.
func PlaceOrder(id int64) string { return "order-" + i64(id) }

// flashClass is the flash's CSS class: red for an error, green otherwise.
func (p Page) flashClass() string {
	if p.FlashKind == FlashError {
		return "flash flash-error"
	}
	return "flash flash-success"
}

// PageUser is the logged-in user as the layout shows them.
type PageUser struct {
	ID       int64
	Username string
	Role     string
}

// IsStaff reports whether the user may use the merchant area.
func (p Page) IsStaff() bool {
	return p.User != nil && (p.User.Role == "merchant" || p.User.Role == "admin")
}

// IsAdmin reports whether the user is an admin.
func (p Page) IsAdmin() bool { return p.User != nil && p.User.Role == "admin" }

// AuthForm is the state of a login or sign-up form.
type AuthForm struct {
	Username string
	Next     string // a local path to go to afterwards ("/" for none)
	Error    string
	// RetryAfter is how many seconds sign-in stays locked (0: not locked).
	RetryAfter int
}

// nextQuery carries a local next path on a link between the login and
// sign-up forms ("" when it is the home page).
func nextQuery(next string) string {
	if next == "" || next == "/" {
		return ""
	}
	return "?next=" + url.QueryEscape(next)
}

// flashRole is how assistive technology announces a flash: an error at once.
func flashRole(kind string) string {
	if kind == FlashError {
		return "alert"
	}
	return "status"
}
