// Package views holds the templ components of every HTML page. Components
// take plain structs, never a request or a store.
package views

// Page is what the layout needs on every page.
type Page struct {
	Title       string
	User        *PageUser
	Flash       string
	CSRF        string
	MonitorPath string
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
	Next     string
	Error    string
}
