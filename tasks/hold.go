package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
)

// ErrHeld is a task's answer while a steering switch holds its kind of
// work (reminders paused): the task is retried after HeldRetry without
// counting as a failure, so it goes out once the switch is lifted.
var ErrHeld = errors.New("held by a steering switch")

// HeldRetry is how soon a held task is tried again.
const HeldRetry = 5 * time.Second

// ReminderTypes are the tasks that deliver reminders, held while reminders are paused.
var ReminderTypes = []string{TypeCouponRemind, TypeCouponDeliver, TypeCouponSweep, TypeGoodsRemind}

// Hold answers ErrHeld, without running it, to every task of the given
// types while held() says so.
func Hold(held func() bool, types ...string) asynq.MiddlewareFunc {
	of := map[string]bool{}
	for _, t := range types {
		of[t] = true
	}
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			if of[t.Type()] && held() {
				return fmt.Errorf("%s: %w", t.Type(), ErrHeld)
			}
			return next.ProcessTask(ctx, t)
		})
	}
}

// IsFailure is the worker's judge of a task's error: a held task did not fail
// (its retries are not spent).
func IsFailure(err error) bool { return err != nil && !errors.Is(err, ErrHeld) }

// RetryDelay is how long the worker waits before it tries a task again: a
// held one after HeldRetry, any other as asynq does by default.
func RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	if errors.Is(err, ErrHeld) {
		return HeldRetry
	}
	return asynq.DefaultRetryDelayFunc(n, err, t)
}
