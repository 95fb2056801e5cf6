package coupon

import (
	"context"
	"errors"
	"strconv"

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

// RollBackAsPromotedReplica leaves the template as a replica that lagged
// behind its master and was promoted holds it: the last grabs, by the users
// lost (flushed or not), never happened there (their units are back in
// stock, their counts down, their queued records gone), and the template is
// recorded as given out by another node (the dead master's ID).
func (s *Service) RollBackAsPromotedReplica(ctx context.Context, couponID int64, lost []int64) error {
	q := grabQueue(couponID)
	recs, err := s.Redis.LRange(ctx, q.Pending, 0, -1).Result()
	if err != nil {
		return err
	}
	gone := map[int64]bool{}
	for _, u := range lost {
		gone[u] = true
		if err := s.Redis.HIncrBy(ctx, usersKey(couponID), strconv.FormatInt(u, 10), -1).Err(); err != nil {
			return err
		}
	}
	for _, rec := range recs {
		if g, ok := parseGrabRecord(rec); ok && gone[g.user] {
			if err := s.Redis.LRem(ctx, q.Pending, 0, rec).Err(); err != nil {
				return err
			}
		}
	}
	if err := s.Redis.IncrBy(ctx, stockKey(couponID), int64(len(lost))).Err(); err != nil {
		return err
	}
	return s.Redis.HSet(ctx, metaKey(couponID), "node", "0123456789abcdef0123456789abcdef01234567").Err()
}
