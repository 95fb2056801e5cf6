package handlers

import (
	"testing"
	"time"
)

// What static/app.js posts for a datetime-local field (RFC 3339 with the
// browser's offset) is one instant whatever tz_offset says; a bare value
// (no script) still uses tz_offset; anything else is refused.
func TestParseLocalTimeInstants(t *testing.T) {
	want := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		raw string
		off int
		ok  bool
	}{
		{"2026-12-01T14:00:00+08:00", 0, true},
		{"2026-12-01T14:00:00+08:00", 300, true},
		{"2026-12-01T06:00:00.000Z", -480, true},
		{"2026-12-01T14:00", -480, true},
		{"2026-12-01T01:00", 300, true},
		{"14:00 tomorrow", 0, false},
		{"2026-12-01T14:00:00+8", 0, false},
	} {
		got, err := parseLocalTime(tc.raw, tc.off)
		if (err == nil) != tc.ok {
			t.Errorf("%q: err %v, want ok=%v", tc.raw, err, tc.ok)
			continue
		}
		if tc.ok && !got.Equal(want) {
			t.Errorf("%q (offset %d): %v, want %v", tc.raw, tc.off, got, want)
		}
	}
}
