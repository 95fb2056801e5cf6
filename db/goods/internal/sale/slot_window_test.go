package sale

import (
	"testing"
	"time"

	"github.com/seckill/seckill/db/model"
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
		{"long before", start.Add(-time.Hour), model.SlotUpcoming, false},
		{"just before the window", start.Add(-PreheatWindow - time.Millisecond), model.SlotUpcoming, false},
		{"window opens", start.Add(-PreheatWindow), model.SlotUpcoming, true},
		{"a moment before start", start.Add(-time.Millisecond), model.SlotUpcoming, true},
		{"at start", start, model.SlotLive, true},
		{"inside", start.Add(time.Hour), model.SlotLive, true},
		{"last moment", end.Add(-time.Millisecond), model.SlotLive, true},
		{"at end", end, model.SlotEnded, false},
		{"after", end.Add(time.Hour), model.SlotEnded, false},
	} {
		if got := SlotState(tc.now, start, end); got != tc.state {
			t.Errorf("%s: SlotState = %q, want %q", tc.name, got, tc.state)
		}
		if got := PreheatDue(tc.now, start, end); got != tc.preheat {
			t.Errorf("%s: PreheatDue = %v, want %v", tc.name, got, tc.preheat)
		}
	}
}
