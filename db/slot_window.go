package db

import "time"

// Slot states as the API shows them.
const (
	SlotUpcoming = "upcoming"
	SlotLive     = "live"
	SlotEnded    = "ended"
)

// MaxScheduleAhead is how far ahead a sale window (a slot, a coupon's grab
// window) may open: a start in year 9999 is a typo or abuse, not a plan.
const MaxScheduleAhead = 366 * 24 * time.Hour

// PreheatWindow is how long before its slot opens a goods is loaded into Redis.
const PreheatWindow = 10 * time.Minute

// SlotState says where now falls against the sale window [start, end).
func SlotState(now, start, end time.Time) string {
	switch {
	case now.Before(start):
		return SlotUpcoming
	case now.Before(end):
		return SlotLive
	default:
		return SlotEnded
	}
}

// PreheatDue reports whether goods of a slot belong in Redis at now: the slot
// opens within PreheatWindow (or already has) and has not ended.
func PreheatDue(now, start, end time.Time) bool {
	return !now.Before(start.Add(-PreheatWindow)) && now.Before(end)
}
