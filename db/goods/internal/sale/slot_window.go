package sale

import (
	"time"

	"github.com/seckill/seckill/db/model"
)

// PreheatWindow is how long before its slot opens a goods is loaded into Redis.
const PreheatWindow = 10 * time.Minute

// SlotState says where now falls against the sale window [start, end).
func SlotState(now, start, end time.Time) string {
	switch {
	case now.Before(start):
		return model.SlotUpcoming
	case now.Before(end):
		return model.SlotLive
	default:
		return model.SlotEnded
	}
}

// PreheatDue reports whether goods of a slot belong in Redis at now: the slot
// opens within PreheatWindow (or already has) and has not ended.
func PreheatDue(now, start, end time.Time) bool {
	return !now.Before(start.Add(-PreheatWindow)) && now.Before(end)
}
