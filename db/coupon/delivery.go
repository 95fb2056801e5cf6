package coupon

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/outbound"
	"github.com/seckill/seckill/db/remind"
	"github.com/seckill/seckill/db/sqldb"
	"github.com/seckill/seckill/tasks"
)

// Fan-out sizes: bookings per page (one transaction of the store for the app
// channel), concurrent email and webhook attempts, attempts per delivery,
// deliveries one sweep takes over at most.
const (
	ReminderPageSize    = remind.PageSize
	reminderSenders     = 32
	maxDeliveryAttempts = 6
	sweepBatch          = 1000
)

// An email or webhook attempt belongs to the worker that claimed it until its
// lease runs out; then the sweep takes the delivery over. The lease is far
// longer than one send may take (sendBudget: the slower channel's timeout and
// a margin), so the sweep never takes over from a worker that is alive; a
// worker that waited for a sender slot until less than sendBudget of its
// lease was left renews it before it sends.
const (
	sendBudget    = max(outbound.SMTPTimeout, outbound.WebhookTimeout) + 5*time.Second
	deliveryLease = 4 * max(outbound.SMTPTimeout, outbound.WebhookTimeout)
)

// deliveryWhere selects one delivery by its key, in deliveryKey's order.
const deliveryWhere = `template_id = ? AND grab_start_ms = ? AND minutes_before = ? AND channel = ? AND user_id = ?`

func deliveryKey(p tasks.CouponDeliverPayload) []any {
	return []any{p.CouponID, p.GrabStartAt.UnixMilli(), p.MinutesBefore, p.Channel, p.UserID}
}

// claim is an email or webhook attempt a worker holds: the delivery, the
// attempt's number, and the lease (unix ms) the worker set. Every write of
// the attempt checks the row still carries that lease, so a worker whose
// delivery was taken over changes nothing.
type claim struct {
	p        tasks.CouponDeliverPayload
	attempts int
	lease    int64
}

// Delivery states recorded in reminder_deliveries.
const (
	deliveryPending  = "pending"
	deliverySent     = "sent"
	deliveryRetrying = "retrying"
	deliveryFailed   = "failed"
	deliverySkipped  = "skipped"
)

// retryDelay is the wait before attempt n+1 of an email or webhook: the
// configured base, doubling, at most an hour.
func (s *Service) retryDelay(attempts int) time.Duration {
	d := s.RetryDelay
	if d <= 0 {
		d = 10 * time.Second
	}
	for i := 1; i < attempts && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}

func reminderText(c *model.Coupon, minutes int) string {
	return fmt.Sprintf("“%s” opens for grabs in %d minutes, at %s.", c.Title, minutes, c.GrabStartAt.UTC().Format(model.TimeLayout)+" UTC")
}

// SendReminders runs one reminder time of a template: it pages through the
// bookings with the lead time's bit set on any channel and notifies them in
// batches. Every delivery is recorded first, so a task run again (Asynq
// delivers at least once) skips what was sent. A task from before a
// reschedule finds the start moved and does nothing.
func (s *Service) SendReminders(ctx context.Context, p tasks.CouponRemindPayload) error {
	c, err := s.row(ctx, p.CouponID)
	if db.ErrorCode(err) == db.ENOTFOUND {
		s.Log.Warn("reminder for a coupon that does not exist", "coupon", p.CouponID)
		return nil
	} else if err != nil {
		return err
	}
	if !c.GrabStartAt.Equal(p.GrabStartAt) || !ValidLeadTime(p.MinutesBefore) {
		return nil
	}
	run := &reminderRun{s: s, c: c, minutes: p.MinutesBefore, client: s.webhook().Client(), sem: make(chan struct{}, reminderSenders)}
	defer run.client.CloseIdleConnections()
	err = run.fanOut(ctx)
	run.wg.Wait()
	return errors.Join(err, errors.Join(run.errs...))
}

// reminderRun is one fan-out: the app channel goes out page by page in
// transactions; emails and webhooks run beside it, each on its own, so a
// slow endpoint holds one sender and never the others.
type reminderRun struct {
	s       *Service
	c       *model.Coupon
	minutes int
	client  *http.Client
	sem     chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	errs    []error
}

func (r *reminderRun) fanOut(ctx context.Context) error {
	st := r.s.reminders()
	subj := remind.Subject{ID: r.c.ID, Title: r.c.Title, Start: r.c.GrabStartAt}
	n := model.Notification{Kind: model.NotificationCouponReminder, CouponID: r.c.ID, Message: reminderText(r.c, r.minutes)}
	return st.Page(ctx, r.c.ID, r.minutes, []string{model.ChannelApp, model.ChannelEmail, model.ChannelWebhook}, func(byChannel map[string][]int64) error {
		if err := st.SendApp(ctx, subj, r.minutes, byChannel[model.ChannelApp], n); err != nil {
			return err
		}
		for _, ch := range []string{model.ChannelEmail, model.ChannelWebhook} {
			if err := r.startExternal(ctx, ch, byChannel[ch]); err != nil {
				return err
			}
		}
		return nil
	})
}

// startExternal claims the page's deliveries on an email or webhook channel
// and starts an attempt for each claimed one.
func (r *reminderRun) startExternal(ctx context.Context, channel string, users []int64) error {
	claims, addrs, err := r.claimExternal(ctx, channel, users)
	if err != nil {
		return err
	}
	for _, cl := range claims {
		select {
		case r.sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		r.wg.Add(1)
		go func(cl claim, addr string) {
			defer func() { <-r.sem; r.wg.Done() }()
			if err := r.s.send(ctx, r.client, r.c, cl, addr); err != nil {
				r.mu.Lock()
				r.errs = append(r.errs, err)
				r.mu.Unlock()
			}
		}(cl, addrs[cl.p.UserID])
	}
	return nil
}

// claimExternal records the page's deliveries on an email or webhook channel
// and returns the ones this run claimed, each leased to it (a row that exists
// already was claimed by an earlier run, and the sweep finishes it if that
// run died), with every user's address.
func (r *reminderRun) claimExternal(ctx context.Context, channel string, users []int64) ([]claim, map[int64]string, error) {
	if len(users) == 0 {
		return nil, nil, nil
	}
	addrs, err := r.s.addresses(ctx, channel, users)
	if err != nil {
		return nil, nil, err
	}
	start, at := r.c.GrabStartAt.UnixMilli(), r.s.Now().UnixMilli()
	lease := at + deliveryLease.Milliseconds()
	rows := remind.UserRows(users, func(uid int64) (string, any) {
		if addrs[uid] == "" || (channel == model.ChannelEmail && r.s.SMTPURL == "") {
			return deliverySkipped, nil // the address was removed after booking
		}
		return deliveryPending, lease
	})
	var claimed []int64
	err = r.s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		if err := r.s.SQL.Stage(ctx, tx, "reminder_page", remind.PageColumns, rows); err != nil {
			return err
		}
		// One statement: the rows recorded now are the claims of this run.
		claimed, err = sqldb.IDs(ctx, tx, `INSERT INTO reminder_deliveries
			(template_id, grab_start_ms, minutes_before, channel, user_id, status, attempts, created_ms, lease_until_ms)
			SELECT ?, ?, ?, ?, p.user_id, p.status, 1, ?, p.lease_until_ms FROM reminder_page AS p WHERE true
			ON CONFLICT DO NOTHING RETURNING CASE WHEN status = ? THEN user_id ELSE 0 END`,
			r.c.ID, start, r.minutes, channel, at, deliveryPending)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("claim %s reminders of coupon %d: %w", channel, r.c.ID, err)
	}
	slices.Sort(claimed)
	var claims []claim
	for _, uid := range claimed {
		if uid != 0 {
			claims = append(claims, claim{p: tasks.CouponDeliverPayload{CouponID: r.c.ID, GrabStartAt: r.c.GrabStartAt,
				MinutesBefore: r.minutes, Channel: channel, UserID: uid}, attempts: 1, lease: lease})
		}
	}
	return claims, addrs, nil
}

// addresses returns each user's email or webhook URL.
func (s *Service) addresses(ctx context.Context, channel string, users []int64) (map[int64]string, error) {
	col := "email"
	if channel == model.ChannelWebhook {
		col = "webhook_url"
	}
	args := make([]any, len(users))
	for i, u := range users {
		args[i] = u
	}
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT id, `+col+` FROM users WHERE id IN (?`+strings.Repeat(", ?", len(users)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]string, len(users))
	for rows.Next() {
		var id int64
		var a string
		if err := rows.Scan(&id, &a); err != nil {
			return nil, err
		}
		out[id] = a
	}
	return out, rows.Err()
}

// reminderMail is a reminder email's subject and body in the language the
// account reads the shop in (Translate; English without it).
func (s *Service) reminderMail(locale string, c *model.Coupon, minutes int) (subject, body string) {
	tr := func(msg string) string {
		if s.Translate == nil {
			return msg
		}
		return s.Translate(locale, msg)
	}
	subject = tr(fmt.Sprintf("Reminder: “%s” opens in %d minutes", c.Title, minutes))
	body = tr(reminderText(c, minutes)) + "\n\n" + tr("Coupon:") + " " + c.Title + "\n" +
		tr("Grab window opens:") + " " + c.GrabStartAt.UTC().Format(time.RFC3339) + "\n\n" + tr("Grab it in the coupon centre.") + "\n"
	return subject, body
}

// localeOf is the language the user reads the shop in ("" when never picked or unknown).
func (s *Service) localeOf(ctx context.Context, userID int64) string {
	var loc string
	s.SQL.R.QueryRowContext(ctx, `SELECT locale FROM users WHERE id = ?`, userID).Scan(&loc)
	return loc
}

// deliverExternal makes one attempt of an email or webhook reminder.
func (s *Service) deliverExternal(ctx context.Context, client *http.Client, c *model.Coupon, p tasks.CouponDeliverPayload, addr string) error {
	switch p.Channel {
	case model.ChannelWebhook:
		body, _ := json.Marshal(WebhookReminder{Type: model.NotificationCouponReminder, CouponID: c.ID, Title: c.Title,
			GrabStartAt: c.GrabStartAt.UTC(), MinutesBefore: p.MinutesBefore, UserID: p.UserID})
		id := fmt.Sprintf("%d-%d-%d-%d", c.ID, c.GrabStartAt.Unix(), p.MinutesBefore, p.UserID)
		return s.webhook().Post(ctx, client, addr, id, body)
	case model.ChannelEmail:
		subject, body := s.reminderMail(s.localeOf(ctx, p.UserID), c, p.MinutesBefore)
		return outbound.SendMail(ctx, s.SMTPURL, addr, subject, body)
	}
	return outbound.PermanentError(fmt.Errorf("channel %s has no sender", p.Channel))
}

// send makes the attempt cl holds and records its outcome. A claim whose
// lease is nearly over is renewed first; one that was taken over meanwhile
// (its worker waited for a sender slot past the lease) sends nothing.
func (s *Service) send(ctx context.Context, client *http.Client, c *model.Coupon, cl claim, addr string) error {
	if !s.Now().Add(sendBudget).Before(time.UnixMilli(cl.lease)) {
		lease := s.Now().Add(deliveryLease).UnixMilli()
		res, err := s.SQL.W.ExecContext(ctx, `UPDATE reminder_deliveries SET lease_until_ms = ? WHERE `+deliveryWhere+`
			AND status = 'pending' AND lease_until_ms = ?`, append(append([]any{lease}, deliveryKey(cl.p)...), cl.lease)...)
		if err != nil {
			return fmt.Errorf("renew %s delivery lease: %w", cl.p.Channel, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // taken over by the sweep, which sends it
		}
		cl.lease = lease
	}
	sendCtx, cancel := context.WithTimeout(ctx, sendBudget)
	defer cancel()
	return s.finishDelivery(ctx, cl, s.deliverExternal(sendCtx, client, c, cl.p, addr))
}

// finishDelivery records the outcome of the attempt cl holds. A failure
// that may pass (5xx, network) becomes its own delayed task, so Asynq retries
// it with backoff apart from every other delivery; the row stays leased to
// that task until a lease after its due time, so the sweep steps in if the
// task is lost.
func (s *Service) finishDelivery(ctx context.Context, cl claim, sendErr error) error {
	p, attempts := cl.p, cl.attempts
	status, msg := deliverySent, ""
	var lease any
	if sendErr != nil {
		msg = sendErr.Error()
		status = deliveryFailed
		if !outbound.Permanent(sendErr) && attempts < maxDeliveryAttempts {
			next := p
			next.Attempt = attempts
			delay := s.retryDelay(attempts)
			_, err := s.Tasks.EnqueueContext(context.WithoutCancel(ctx), tasks.NewCouponDeliverTask(next, delay))
			if err == nil {
				status, lease = deliveryRetrying, s.Now().Add(delay+deliveryLease).UnixMilli()
			} else {
				msg += "; scheduling a retry failed: " + err.Error()
			}
		}
		s.Log.Info("reminder delivery failed", "coupon", p.CouponID, "channel", p.Channel, "user", p.UserID, "attempt", attempts, "next", status, "err", sendErr)
	}
	var sentAt any
	if status == deliverySent {
		sentAt = s.Now().UnixMilli()
	}
	res, err := s.SQL.W.ExecContext(context.WithoutCancel(ctx), `UPDATE reminder_deliveries SET status = ?, attempts = ?, last_error = ?, sent_ms = ?, lease_until_ms = ?
		WHERE `+deliveryWhere+` AND status = 'pending' AND lease_until_ms = ?`,
		append(append([]any{status, attempts, msg, sentAt, lease}, deliveryKey(p)...), cl.lease)...)
	if err != nil {
		return fmt.Errorf("record %s delivery: %w", p.Channel, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		s.Log.Warn("reminder attempt outlived its lease; the sweep took the delivery over", "coupon", p.CouponID,
			"channel", p.Channel, "user", p.UserID, "attempt", attempts, "outcome", status)
	}
	return nil
}

// RetryDelivery makes the next attempt of a delivery that failed. Only the
// run that moves the attempt count on from p.Attempt sends, so a task that
// Asynq delivers twice notifies once; the attempt is leased to it like a
// fan-out's, so if its worker dies the sweep makes it.
func (s *Service) RetryDelivery(ctx context.Context, p tasks.CouponDeliverPayload) error {
	lease := s.Now().Add(deliveryLease).UnixMilli()
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE reminder_deliveries SET status = 'pending', attempts = attempts + 1, lease_until_ms = ?
		WHERE `+deliveryWhere+` AND status = 'retrying' AND attempts = ?`,
		append(append([]any{lease}, deliveryKey(p)...), p.Attempt)...)
	if err != nil {
		return fmt.Errorf("claim delivery retry: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // delivered, given up, or claimed by another run of this task or by the sweep
	}
	client := s.webhook().Client()
	defer client.CloseIdleConnections()
	return s.resume(ctx, client, claim{p: p, attempts: p.Attempt + 1, lease: lease})
}

// resume makes an attempt that a retry or the sweep claimed, unless the
// delivery is moot now: the template deleted, rescheduled or ended, the
// booking cancelled, or the address gone.
func (s *Service) resume(ctx context.Context, client *http.Client, cl claim) error {
	p := cl.p
	skip := func(why string) error {
		_, err := s.SQL.W.ExecContext(ctx, `UPDATE reminder_deliveries SET status = 'skipped', last_error = ?, lease_until_ms = NULL
			WHERE `+deliveryWhere+` AND status = 'pending' AND lease_until_ms = ?`, append(append([]any{why}, deliveryKey(p)...), cl.lease)...)
		return err
	}
	c, err := s.row(ctx, p.CouponID)
	if db.ErrorCode(err) == db.ENOTFOUND {
		return skip("coupon deleted")
	} else if err != nil {
		return err
	}
	if !c.GrabStartAt.Equal(p.GrabStartAt) {
		return skip("coupon rescheduled")
	}
	if !s.Now().Before(c.GrabEndAt) {
		return skip("coupon ended")
	}
	bit, err := ReminderBit(p.MinutesBefore, p.Channel)
	if err != nil {
		return skip("not a reminder")
	}
	var bits int64
	s.SQL.R.QueryRowContext(ctx, `SELECT bits FROM coupon_reminders WHERE user_id = ? AND template_id = ?`, p.UserID, p.CouponID).Scan(&bits)
	if bits&bit == 0 {
		return skip("booking cancelled")
	}
	addrs, err := s.addresses(ctx, p.Channel, []int64{p.UserID})
	if err != nil {
		return err
	}
	if addrs[p.UserID] == "" || (p.Channel == model.ChannelEmail && s.SMTPURL == "") {
		return skip("no address")
	}
	return s.send(ctx, client, c, cl, addrs[p.UserID])
}

// expired is an unfinished delivery whose lease ran out, as the sweep read it.
type expired struct {
	p        tasks.CouponDeliverPayload
	status   string
	attempts int
	lease    int64
}

// SweepDeliveries takes over the email and webhook deliveries whose lease
// ran out (a worker died in its attempt, or a retry task was lost) and makes
// their next attempt. Taking over moves the lease on, and only one sweep can
// move a given lease, so each lease that runs out yields one attempt, and a
// delivery whose worker is alive (inside its lease) is left alone. A
// delivery out of attempts fails for good.
func (s *Service) SweepDeliveries(ctx context.Context) error {
	due, err := s.expiredDeliveries(ctx)
	if err != nil || len(due) == 0 {
		return err
	}
	client := s.webhook().Client()
	defer client.CloseIdleConnections()
	sem := make(chan struct{}, reminderSenders)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, e := range due {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Add(1)
		go func(e expired) {
			defer func() { <-sem; wg.Done() }()
			if err := s.takeOver(ctx, client, e); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(e)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// expiredDeliveries lists the unfinished deliveries whose lease is over, longest over first.
func (s *Service) expiredDeliveries(ctx context.Context) ([]expired, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT template_id, grab_start_ms, minutes_before, channel, user_id, status, attempts, lease_until_ms
		FROM reminder_deliveries WHERE status IN ('pending', 'retrying') AND lease_until_ms <= ? ORDER BY lease_until_ms LIMIT ?`,
		s.Now().UnixMilli(), sweepBatch)
	if err != nil {
		return nil, fmt.Errorf("list expired delivery leases: %w", err)
	}
	defer rows.Close()
	var out []expired
	for rows.Next() {
		var e expired
		var start int64
		if err := rows.Scan(&e.p.CouponID, &start, &e.p.MinutesBefore, &e.p.Channel, &e.p.UserID, &e.status, &e.attempts, &e.lease); err != nil {
			return nil, err
		}
		e.p.GrabStartAt = fromMS(start)
		out = append(out, e)
	}
	return out, rows.Err()
}

// takeOver moves an expired lease on to this sweep and makes the next attempt,
// unless another sweep moved it first or the delivery is out of attempts.
func (s *Service) takeOver(ctx context.Context, client *http.Client, e expired) error {
	was := append(append(deliveryKey(e.p), e.status, e.attempts), e.lease)
	if e.attempts >= maxDeliveryAttempts {
		_, err := s.SQL.W.ExecContext(ctx, `UPDATE reminder_deliveries SET status = 'failed', lease_until_ms = NULL,
			last_error = 'gave up: attempt ' || attempts || ' never finished'
			WHERE `+deliveryWhere+` AND status = ? AND attempts = ? AND lease_until_ms = ?`, was...)
		return err
	}
	lease := s.Now().Add(deliveryLease).UnixMilli()
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE reminder_deliveries SET status = 'pending', attempts = attempts + 1, lease_until_ms = ?,
			last_error = CASE status WHEN 'pending' THEN 'attempt ' || attempts || ' never finished' ELSE last_error END
		WHERE `+deliveryWhere+` AND status = ? AND attempts = ? AND lease_until_ms = ?`, append([]any{lease}, was...)...)
	if err != nil {
		return fmt.Errorf("take over %s delivery: %w", e.p.Channel, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // another sweep moved this lease first, or the worker finished after all
	}
	s.Log.Info("resending a reminder whose attempt ran out of its lease", "coupon", e.p.CouponID, "channel", e.p.Channel,
		"user", e.p.UserID, "was", e.status, "attempt", e.attempts+1)
	return s.resume(ctx, client, claim{p: e.p, attempts: e.attempts + 1, lease: lease})
}

// DeliveryCounts counts a template's recorded reminder deliveries by channel and status.
func (s *Service) DeliveryCounts(ctx context.Context, couponID int64) (map[string]map[string]int64, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT channel, status, COUNT(*) FROM reminder_deliveries WHERE template_id = ? GROUP BY channel, status`, couponID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]map[string]int64{}
	for rows.Next() {
		var ch, st string
		var n int64
		if err := rows.Scan(&ch, &st, &n); err != nil {
			return nil, err
		}
		if out[ch] == nil {
			out[ch] = map[string]int64{}
		}
		out[ch][st] = n
	}
	return out, rows.Err()
}
