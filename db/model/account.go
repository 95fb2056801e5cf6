package model

import "time"

// Roles a user can hold.
const (
	RoleUser     = "user"
	RoleMerchant = "merchant"
	RoleAdmin    = "admin"
)

// User is an account.
type User struct {
	ID        int64     `json:"id"`
	Username  string    `json:"username"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"-"`
}

// Settings are a user's delivery addresses for reminders.
type Settings struct {
	Email      string `json:"email"`
	WebhookURL string `json:"webhook_url"`
}

// SettingsUpdate changes the fields that are not nil; an empty string clears one.
type SettingsUpdate struct {
	Email      *string `json:"email"`
	WebhookURL *string `json:"webhook_url"`
}

// Claims is what a signed token says about its bearer; checking it needs no look-up.
type Claims struct {
	UserID   int64  `json:"uid"`
	Username string `json:"name"`
	Role     string `json:"role"`
	Expires  int64  `json:"exp"` // unix seconds
	// SessionID names the login this token belongs to, so it can be ended.
	SessionID string `json:"sid"`
	IssuedAt  int64  `json:"iat"` // unix microseconds
}

// Staff reports whether the claims are a merchant's or an admin's, who may
// see what shoppers do not (hidden goods of their own, every one for an admin).
func (c Claims) Staff() bool { return c.Role == RoleMerchant || c.Role == RoleAdmin }
