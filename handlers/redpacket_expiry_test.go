package handlers

import (
	"testing"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/views"
)

// The red packet form's expiry choice becomes the API's expires_in: a listed
// duration as it is, a date and time as the seconds until it (in the
// browser's zone), and a date in the past, too far or missing a field error.
func TestRedPacketExpiryChoice(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, choice, at, tz, want string
	}{
		{"1 hour", "1h", "", "", "1h"},
		{"6 hours", "6h", "", "", "6h"},
		{"24 hours", "24h", "", "", "24h"},
		{"3 days", "72h", "", "", "72h"},
		{"7 days", "168h", "", "", "168h"},
		{"a date in UTC", "at", "2026-12-02T12:30", "0", "26h30m0s"},
		{"a date typed in UTC+8 (offset -480)", "at", "2026-12-02T12:30", "-480", "18h30m0s"},
		{"a date with its own offset", "at", "2026-12-01T20:00:00+08:00", "", "2h0m0s"},
		{"seconds dropped", "at", "2026-12-01T10:00:30", "0", "30s"},
	} {
		got, err := redPacketExpiresIn(tc.choice, tc.at, tc.tz, now)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ name, at string }{
		{"no date", ""},
		{"not a date", "tomorrow"},
		{"now", "2026-12-01T18:00:00+08:00"},
		{"the past", "2026-11-30T09:00"},
		{"beyond 30 days", "2027-01-01T10:00"},
	} {
		got, err := redPacketExpiresIn("at", tc.at, "0", now)
		if err == nil || db.FieldOf(err) != "expires_in" {
			t.Errorf("%s (%q): %q, %v; want an expires_in field error", tc.name, tc.at, got, err)
		}
	}
}

// The form offers 1 hour, 6 hours, 24 hours, 3 days and 7 days, each posted
// as the expires_in the API reads.
func TestRedPacketExpiryChoicesAreDurations(t *testing.T) {
	want := []time.Duration{time.Hour, 6 * time.Hour, 24 * time.Hour, 3 * 24 * time.Hour, 7 * 24 * time.Hour}
	if len(views.RedPacketExpiries) != len(want) {
		t.Fatalf("%d choices, want %d", len(views.RedPacketExpiries), len(want))
	}
	for i, c := range views.RedPacketExpiries {
		got, err := redPacketExpiresIn(c.Value, "", "", time.Now())
		d, perr := time.ParseDuration(got)
		if err != nil || perr != nil || d != want[i] {
			t.Errorf("choice %q (%s): expires_in %q (%v %v), want %s", c.Value, c.Label, got, err, perr, want[i])
		}
	}
}
