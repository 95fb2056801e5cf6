package db

import (
	"testing"
	"time"
)

func TestSlotWindow(t *testing.T) {
	start := time.Date(2030, 5, 1, 10, 0, 0, 0, time.UTC)
	end := start.Add(2 * time.Hour)
	for _, tc := range []struct {
		name    string
		now     time.Time
		state   string
		preheat bool
	}{
		{"long before", start.Add(-time.Hour), SlotUpcoming, false},
		{"just before the window", start.Add(-PreheatWindow - time.Millisecond), SlotUpcoming, false},
		{"window opens", start.Add(-PreheatWindow), SlotUpcoming, true},
		{"a moment before start", start.Add(-time.Millisecond), SlotUpcoming, true},
		{"at start", start, SlotLive, true},
		{"inside", start.Add(time.Hour), SlotLive, true},
		{"last moment", end.Add(-time.Millisecond), SlotLive, true},
		{"at end", end, SlotEnded, false},
		{"after", end.Add(time.Hour), SlotEnded, false},
	} {
		if got := SlotState(tc.now, start, end); got != tc.state {
			t.Errorf("%s: SlotState = %q, want %q", tc.name, got, tc.state)
		}
		if got := PreheatDue(tc.now, start, end); got != tc.preheat {
			t.Errorf("%s: PreheatDue = %v, want %v", tc.name, got, tc.preheat)
		}
	}
}
