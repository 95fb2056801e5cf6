package backend

import "time"

// DueAt is when to schedule a task that must not run before at: Asynq keeps
// schedules in whole seconds and rounds down, so this rounds up.
func DueAt(at time.Time) time.Time {
	if t := at.Truncate(time.Second); t.Before(at) {
		return t.Add(time.Second)
	}
	return at
}
