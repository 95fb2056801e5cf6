package backend

import (
	"testing"
	"time"
)

func TestDueAtRoundsUp(t *testing.T) {
	for _, tc := range []struct{ at, want string }{
		{"2030-01-01T10:00:00.001Z", "2030-01-01T10:00:01Z"},
		{"2030-01-01T10:00:00.999Z", "2030-01-01T10:00:01Z"},
		{"2030-01-01T10:00:00Z", "2030-01-01T10:00:00Z"},
	} {
		at, _ := time.Parse(time.RFC3339Nano, tc.at)
		if got := DueAt(at).UTC().Format(time.RFC3339Nano); got != tc.want {
			t.Errorf("DueAt(%s) = %s, want %s", tc.at, got, tc.want)
		}
	}
}
