package coupon

import (
	"context"
	"errors"

	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/tasks"
)

// Test-only doors into the coupon internals, for the external coupon_test package.

// GrabQueue is the template's flush queue of grab records.
func GrabQueue(id int64) backend.FlushQueue { return grabQueue(id) }

// DeliveryLease and SendBudget are how long a claimed attempt is held, and
// how much of its lease a sender wants left when it starts.
const (
	DeliveryLease = deliveryLease
	SendBudget    = sendBudget
)

// ClaimExternal claims the users' deliveries on an email or webhook channel
// as the fan-out of p does, and returns how many it claimed and a function
// that makes their attempts, as the worker does once it has sender slots. A
// test that never calls it has a worker that died right after its claim.
func (s *Service) ClaimExternal(ctx context.Context, p tasks.CouponRemindPayload, channel string, users []int64) (int, func() error, error) {
	c, err := s.row(ctx, p.CouponID)
	if err != nil {
		return 0, nil, err
	}
	claims, addrs, err := (&reminderRun{s: s, c: c, minutes: p.MinutesBefore}).claimExternal(ctx, channel, users)
	return len(claims), func() error {
		client := s.webhook().Client()
		defer client.CloseIdleConnections()
		var errs []error
		for _, cl := range claims {
			errs = append(errs, s.send(ctx, client, c, cl, addrs[cl.p.UserID]))
		}
		return errors.Join(errs...)
	}, err
}
