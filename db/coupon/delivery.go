package coupon

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/outbound"
	"github.com/seckill/seckill/tasks"
)

// Fan-out sizes: bookings per page (one SQLite transaction for the app
// channel), concurrent email and webhook attempts, attempts per delivery.
const (
	ReminderPageSize    = 1000
	reminderSenders     = 32
	maxDeliveryAttempts = 6
)

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
	return fmt.Sprintf("“%s” opens for grabs in %d minutes, at %s.", c.Title, minutes, c.GrabStartAt.UTC().Format("2006-01-02 15:04 UTC"))
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
	lead := r.minutes/model.LeadStep - 1
	bitOf := func(channel string) int64 { return 1 << (ChannelIndex(channel)*model.LeadTimes + lead) }
	mask := LeadTimeMask(r.minutes)
	var after int64
	for {
		rows, err := r.s.SQL.R.QueryContext(ctx, `SELECT user_id, bits FROM coupon_reminders
			WHERE template_id = ? AND user_id > ? AND bits & ? != 0 ORDER BY user_id LIMIT ?`, r.c.ID, after, mask, ReminderPageSize)
		if err != nil {
			return fmt.Errorf("page reminders of coupon %d: %w", r.c.ID, err)
		}
		var n int
		byChannel := map[string][]int64{}
		for rows.Next() {
			var uid, bits int64
			if err := rows.Scan(&uid, &bits); err != nil {
				rows.Close()
				return err
			}
			n, after = n+1, uid
			for _, ch := range []string{model.ChannelApp, model.ChannelEmail, model.ChannelWebhook} {
				if bits&bitOf(ch) != 0 {
					byChannel[ch] = append(byChannel[ch], uid)
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if err := r.sendApp(ctx, byChannel[model.ChannelApp]); err != nil {
			return err
		}
		for _, ch := range []string{model.ChannelEmail, model.ChannelWebhook} {
			if err := r.startExternal(ctx, ch, byChannel[ch]); err != nil {
				return err
			}
		}
		if n < ReminderPageSize {
			return nil
		}
	}
}

// sendApp records the deliveries and inbox rows of a page in one
// transaction, then pushes the new notifications live in one pipeline.
func (r *reminderRun) sendApp(ctx context.Context, users []int64) error {
	if len(users) == 0 {
		return nil
	}
	now := r.s.Now().UTC()
	at, start := now.UnixMilli(), r.c.GrabStartAt.UnixMilli()
	list, _ := json.Marshal(users)
	var sent map[int64]model.Notification
	err := r.s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		// Two set-based statements per page: the deliveries not recorded yet
		// (a row there means an earlier run of this task sent it), then
		// their inbox rows.
		fresh, err := queryUsers(ctx, tx, `INSERT OR IGNORE INTO reminder_deliveries
			(template_id, grab_start_ms, minutes_before, channel, user_id, status, attempts, created_ms, sent_ms)
			SELECT ?, ?, ?, 'app', value, 'sent', 1, ?, ? FROM json_each(?) RETURNING user_id`, r.c.ID, start, r.minutes, at, at, string(list))
		if err != nil || len(fresh) == 0 {
			return err
		}
		sent, err = inbox.Add(ctx, tx, fresh, model.Notification{
			Kind: model.NotificationCouponReminder, CouponID: r.c.ID, Message: reminderText(r.c, r.minutes), CreatedAt: now})
		return err
	})
	if err != nil {
		return fmt.Errorf("record app reminders of coupon %d: %w", r.c.ID, err)
	}
	if err := r.s.Events.PublishAll(ctx, inbox.Messages(sent)); err != nil {
		r.s.Log.Warn("push reminders live", "coupon", r.c.ID, "err", err) // the inbox has them
	}
	return nil
}

// queryUsers runs a statement returning user IDs.
func queryUsers(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var uid int64
		if err := rows.Scan(&uid); err != nil {
			return nil, err
		}
		out = append(out, uid)
	}
	return out, rows.Err()
}

// startExternal claims the page's deliveries on an email or webhook channel
// (a row that exists already was claimed by an earlier run) and starts an
// attempt for each claimed one.
func (r *reminderRun) startExternal(ctx context.Context, channel string, users []int64) error {
	if len(users) == 0 {
		return nil
	}
	addrs, err := r.s.addresses(ctx, channel, users)
	if err != nil {
		return err
	}
	start, at := r.c.GrabStartAt.UnixMilli(), r.s.Now().UnixMilli()
	var claimed []int64
	err = r.s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		claimed = claimed[:0]
		st, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO reminder_deliveries
			(template_id, grab_start_ms, minutes_before, channel, user_id, status, attempts, created_ms) VALUES (?, ?, ?, ?, ?, ?, 1, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, uid := range users {
			status := deliveryPending
			if addrs[uid] == "" || (channel == model.ChannelEmail && r.s.SMTPURL == "") {
				status = deliverySkipped // the address was removed after booking
			}
			res, err := st.ExecContext(ctx, r.c.ID, start, r.minutes, channel, uid, status, at)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 && status == deliveryPending {
				claimed = append(claimed, uid)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("claim %s reminders of coupon %d: %w", channel, r.c.ID, err)
	}
	for _, uid := range claimed {
		p := tasks.CouponDeliverPayload{CouponID: r.c.ID, GrabStartAt: r.c.GrabStartAt, MinutesBefore: r.minutes, Channel: channel, UserID: uid}
		select {
		case r.sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		r.wg.Add(1)
		go func(addr string) {
			defer func() { <-r.sem; r.wg.Done() }()
			sendErr := r.s.deliverExternal(ctx, r.client, r.c, p, addr)
			if err := r.s.finishDelivery(ctx, p, 1, sendErr); err != nil {
				r.mu.Lock()
				r.errs = append(r.errs, err)
				r.mu.Unlock()
			}
		}(addrs[uid])
	}
	return nil
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

// deliverExternal makes one attempt of an email or webhook reminder.
func (s *Service) deliverExternal(ctx context.Context, client *http.Client, c *model.Coupon, p tasks.CouponDeliverPayload, addr string) error {
	switch p.Channel {
	case model.ChannelWebhook:
		body, _ := json.Marshal(WebhookReminder{Type: model.NotificationCouponReminder, CouponID: c.ID, Title: c.Title,
			GrabStartAt: c.GrabStartAt.UTC(), MinutesBefore: p.MinutesBefore, UserID: p.UserID})
		id := fmt.Sprintf("%d-%d-%d-%d", c.ID, c.GrabStartAt.Unix(), p.MinutesBefore, p.UserID)
		return s.webhook().Post(ctx, client, addr, id, body)
	case model.ChannelEmail:
		subject := fmt.Sprintf("Reminder: “%s” opens in %d minutes", c.Title, p.MinutesBefore)
		body := fmt.Sprintf("%s\n\nCoupon: %s\nGrab window opens: %s\n\nGrab it in the coupon centre.\n",
			reminderText(c, p.MinutesBefore), c.Title, c.GrabStartAt.UTC().Format(time.RFC3339))
		return outbound.SendMail(ctx, s.SMTPURL, addr, subject, body)
	}
	return outbound.PermanentError(fmt.Errorf("channel %s has no sender", p.Channel))
}

// finishDelivery records the outcome of attempt number attempts. A failure
// that may pass (5xx, network) becomes its own delayed task, so Asynq retries
// it with backoff apart from every other delivery.
func (s *Service) finishDelivery(ctx context.Context, p tasks.CouponDeliverPayload, attempts int, sendErr error) error {
	status, msg := deliverySent, ""
	if sendErr != nil {
		msg = sendErr.Error()
		status = deliveryFailed
		if !outbound.Permanent(sendErr) && attempts < maxDeliveryAttempts {
			next := p
			next.Attempt = attempts
			_, err := s.Tasks.EnqueueContext(context.WithoutCancel(ctx), tasks.NewCouponDeliverTask(next, s.retryDelay(attempts)))
			if err == nil {
				status = deliveryRetrying
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
	_, err := s.SQL.W.ExecContext(context.WithoutCancel(ctx), `UPDATE reminder_deliveries SET status = ?, attempts = ?, last_error = ?, sent_ms = ?
		WHERE template_id = ? AND grab_start_ms = ? AND minutes_before = ? AND channel = ? AND user_id = ?`,
		status, attempts, msg, sentAt, p.CouponID, p.GrabStartAt.UnixMilli(), p.MinutesBefore, p.Channel, p.UserID)
	if err != nil {
		return fmt.Errorf("record %s delivery: %w", p.Channel, err)
	}
	return nil
}

// RetryDelivery makes the next attempt of a delivery that failed. Only the
// run that moves the attempt count on from p.Attempt sends, so a task that
// Asynq delivers twice notifies once; a booking cancelled or a template
// rescheduled since is skipped.
func (s *Service) RetryDelivery(ctx context.Context, p tasks.CouponDeliverPayload) error {
	key := []any{p.CouponID, p.GrabStartAt.UnixMilli(), p.MinutesBefore, p.Channel, p.UserID}
	res, err := s.SQL.W.ExecContext(ctx, `UPDATE reminder_deliveries SET attempts = attempts + 1
		WHERE template_id = ? AND grab_start_ms = ? AND minutes_before = ? AND channel = ? AND user_id = ? AND status = 'retrying' AND attempts = ?`,
		append(key, p.Attempt)...)
	if err != nil {
		return fmt.Errorf("claim delivery retry: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // delivered, given up, or claimed by another run of this task
	}
	attempts := p.Attempt + 1
	skip := func(why string) error {
		_, err := s.SQL.W.ExecContext(ctx, `UPDATE reminder_deliveries SET status = 'skipped', last_error = ?
			WHERE template_id = ? AND grab_start_ms = ? AND minutes_before = ? AND channel = ? AND user_id = ?`, append([]any{why}, key...)...)
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
	client := s.webhook().Client()
	defer client.CloseIdleConnections()
	return s.finishDelivery(ctx, p, attempts, s.deliverExternal(ctx, client, c, p, addrs[p.UserID]))
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
