package db

import "time"

// Bounds on every sale window a merchant sets: a goods slot and a coupon's
// grab window last at most MaxSlotLength and open within MaxScheduleAhead.
const (
	MaxSlotLength = 7 * 24 * time.Hour
	// MaxScheduleAhead is how far ahead a sale window may open: a start in
	// year 9999 is a typo or abuse, not a plan.
	MaxScheduleAhead = 366 * 24 * time.Hour
)
