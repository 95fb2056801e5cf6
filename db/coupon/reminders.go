package coupon

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/tasks"
)

// expand decodes a stored bitmap into reminders due before start.
func expand(bits int64, start time.Time) ([]model.BookedReminder, error) {
	rs, err := DecodeReminders(bits)
	if err != nil {
		return nil, err
	}
	out := make([]model.BookedReminder, len(rs))
	for i, r := range rs {
		out[i] = model.BookedReminder{MinutesBefore: r.MinutesBefore, Channel: r.Channel, RemindAt: model.RemindAt(start, r.MinutesBefore)}
	}
	return out, nil
}

// ChannelProblem says why the user cannot book reminders on a channel, or "" when they can.
func (s *Service) ChannelProblem(ctx context.Context, userID int64, channel string) (string, error) {
	switch channel {
	case model.ChannelApp:
		return "", nil
	case model.ChannelSMS, model.ChannelWechat:
		return channel + " reminders are not available: no provider is configured", nil
	}
	st, err := s.Settings.UserSettings(ctx, userID)
	if err != nil {
		return "", err
	}
	switch {
	case channel == model.ChannelEmail && s.SMTPURL == "":
		return "email reminders are not available: no mail server is configured", nil
	case channel == model.ChannelEmail && st.Email == "":
		return "set your email address in settings first", nil
	case channel == model.ChannelWebhook && st.WebhookURL == "":
		return "set your webhook URL in settings first", nil
	}
	return "", nil
}

// Channels maps every channel to why the user cannot book it ("" when they can).
func (s *Service) Channels(ctx context.Context, userID int64) (map[string]string, error) {
	out := map[string]string{}
	for _, ch := range model.Channels {
		p, err := s.ChannelProblem(ctx, userID, ch)
		if err != nil {
			return nil, err
		}
		out[ch] = p
	}
	return out, nil
}

// Book sets the user's reminder minutes before the template's grab
// window on channel and returns all the user's reminders for the template.
func (s *Service) Book(ctx context.Context, userID, couponID int64, minutes int, channel string) ([]model.BookedReminder, error) {
	bit, err := ReminderBit(minutes, channel)
	if err != nil {
		return nil, err
	}
	c, err := s.row(ctx, couponID)
	if err != nil {
		return nil, err
	}
	if !s.Now().Before(model.RemindAt(c.GrabStartAt, minutes)) {
		return nil, db.Errorf(db.ETOOLATE, "it is too late for a reminder %d minutes before the start", minutes)
	}
	if problem, err := s.ChannelProblem(ctx, userID, channel); err != nil {
		return nil, err
	} else if problem != "" {
		return nil, db.Errorf(db.ENOTCONFIGURED, "%s", problem)
	}
	// The task first: one with no bookings does nothing when it runs, while
	// a booking whose task was never scheduled would never be sent.
	if err := s.scheduleReminder(ctx, c.ID, c.GrabStartAt, minutes); err != nil {
		return nil, err
	}
	// Start time and shop come from the template row inside the statement,
	// read under a share lock (PostgreSQL), so a booking racing a reschedule
	// either waits for it and stores the new time, or commits first and is
	// moved by it: it stores the time the tasks were moved to.
	var bits, start int64
	err = s.SQL.W.QueryRowContext(ctx, `INSERT INTO coupon_reminders (user_id, template_id, bits, grab_start_ms, shop_id, updated_ms)
		SELECT ?, id, ?, grab_start_ms, shop_id, ? FROM coupons WHERE id = ?`+s.SQL.Dialect.ForShare()+`
		ON CONFLICT (user_id, template_id) DO UPDATE SET bits = coupon_reminders.bits | excluded.bits, updated_ms = excluded.updated_ms
		RETURNING bits, grab_start_ms`, userID, bit, s.Now().UnixMilli(), c.ID).Scan(&bits, &start)
	if err != nil {
		return nil, fmt.Errorf("book reminder: %w", err)
	}
	return expand(bits, fromMS(start))
}

// Cancel clears one reminder and returns the user's remaining ones for the template.
func (s *Service) Cancel(ctx context.Context, userID, couponID int64, minutes int, channel string) ([]model.BookedReminder, error) {
	bit, err := ReminderBit(minutes, channel)
	if err != nil {
		return nil, err
	}
	if _, err := s.row(ctx, couponID); err != nil {
		return nil, err
	}
	var bits, start int64
	err = s.SQL.W.QueryRowContext(ctx, `UPDATE coupon_reminders SET bits = bits & ~CAST(? AS BIGINT), updated_ms = ? WHERE user_id = ? AND template_id = ? RETURNING bits, grab_start_ms`,
		bit, s.Now().UnixMilli(), userID, couponID).Scan(&bits, &start)
	if errors.Is(err, sql.ErrNoRows) {
		return []model.BookedReminder{}, nil
	} else if err != nil {
		return nil, fmt.Errorf("cancel reminder: %w", err)
	}
	if bits == 0 {
		if _, err := s.SQL.W.ExecContext(ctx, `DELETE FROM coupon_reminders WHERE user_id = ? AND template_id = ? AND bits = 0`, userID, couponID); err != nil {
			return nil, err
		}
	}
	return expand(bits, fromMS(start))
}

// Reminders lists the user's reminders for one template.
func (s *Service) Reminders(ctx context.Context, userID, couponID int64) ([]model.BookedReminder, error) {
	c, err := s.row(ctx, couponID)
	if err != nil {
		return nil, err
	}
	var bits int64
	err = s.SQL.R.QueryRowContext(ctx, `SELECT bits FROM coupon_reminders WHERE user_id = ? AND template_id = ?`, userID, couponID).Scan(&bits)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	return expand(bits, c.GrabStartAt)
}

// UserReminders lists every reminder the user has booked, soonest first.
func (s *Service) UserReminders(ctx context.Context, userID int64) ([]model.BookedReminder, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT r.template_id, r.bits, r.grab_start_ms, c.title FROM coupon_reminders r
		JOIN coupons c ON c.id = r.template_id WHERE r.user_id = ? AND r.bits != 0 ORDER BY r.template_id`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []model.BookedReminder{}
	for rows.Next() {
		var id, bits, start int64
		var title string
		if err := rows.Scan(&id, &bits, &start, &title); err != nil {
			return nil, err
		}
		rs, err := expand(bits, fromMS(start))
		if err != nil {
			return nil, fmt.Errorf("reminders of user %d for coupon %d: %w", userID, id, err)
		}
		for _, r := range rs {
			r.CouponID, r.Title = id, title
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RemindAt.Before(out[j].RemindAt) })
	return out, rows.Err()
}

// scheduleReminder makes sure the fan-out task of (template, start, lead
// time) exists; its task ID makes every booking after the first a no-op.
func (s *Service) scheduleReminder(ctx context.Context, couponID int64, start time.Time, minutes int) error {
	if s.Tasks == nil {
		return fmt.Errorf("schedule reminder: no task client")
	}
	p := tasks.CouponRemindPayload{CouponID: couponID, GrabStartAt: start.UTC(), MinutesBefore: minutes}
	if err := s.Schedule(ctx, tasks.NewCouponRemindTask(p)); err != nil {
		return fmt.Errorf("schedule reminder of coupon %d at %d minutes: %w", couponID, minutes, err)
	}
	return nil
}

// bookingCounts counts bookings per bit of a template in one scan.
func (s *Service) bookingCounts(ctx context.Context, couponID int64) ([]model.BookingCount, error) {
	q := "SELECT "
	for bit := 0; bit < reminderBits; bit++ {
		if bit > 0 {
			q += ", "
		}
		q += fmt.Sprintf("COALESCE(SUM((bits >> %d) & 1), 0)", bit)
	}
	q += " FROM coupon_reminders WHERE template_id = ?"
	counts := make([]int64, reminderBits)
	dest := make([]any, reminderBits)
	for i := range counts {
		dest[i] = &counts[i]
	}
	if err := s.SQL.R.QueryRowContext(ctx, q, couponID).Scan(dest...); err != nil {
		return nil, fmt.Errorf("count bookings of coupon %d: %w", couponID, err)
	}
	out := []model.BookingCount{}
	for _, m := range model.LeadTimeList() {
		for ch, name := range model.Channels {
			out = append(out, model.BookingCount{MinutesBefore: m, Channel: name, Count: counts[ch*model.LeadTimes+m/model.LeadStep-1]})
		}
	}
	return out, nil
}

// MoveWindow moves a template's grab window. Bookings follow the new
// start: the old fan-out tasks are deleted (one still running finds the start
// changed and does nothing) and new ones scheduled for every booked lead time.
func (s *Service) MoveWindow(ctx context.Context, actor model.Claims, couponID int64, start, end time.Time) (*model.Coupon, error) {
	c, err := s.owned(ctx, actor, couponID)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	if State(c.GrabStartAt, c.GrabEndAt, now) == model.CouponEnded {
		return nil, db.Errorf(db.EENDED, "the grab window of this coupon has ended")
	}
	if err := NormaliseWindow(&start, &end, now); err != nil {
		return nil, err
	}
	old := c.GrabStartAt
	err = s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		// Only the window read and while it has not ended: two moves side by
		// side (PostgreSQL) cannot both pass, nor one the window's end.
		res, err := tx.ExecContext(ctx, `UPDATE coupons SET grab_start_ms = ?, grab_end_ms = ?
			WHERE id = ? AND grab_start_ms = ? AND grab_end_ms = ? AND grab_end_ms > ?`,
			start.UnixMilli(), end.UnixMilli(), c.ID, c.GrabStartAt.UnixMilli(), c.GrabEndAt.UnixMilli(), now.UnixMilli())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return db.Errorf(db.ECONFLICT, "the grab window of coupon %d changed meanwhile or ended: reload and try again", c.ID)
		}
		_, err = tx.ExecContext(ctx, `UPDATE coupon_reminders SET grab_start_ms = ? WHERE template_id = ?`, start.UnixMilli(), c.ID)
		return err
	})
	if db.ErrorCode(err) == db.ECONFLICT {
		return nil, err
	} else if err != nil {
		return nil, fmt.Errorf("update coupon window: %w", err)
	}
	c.GrabStartAt, c.GrabEndAt = start, end
	if err := s.load(ctx, c); err != nil {
		return nil, err
	}
	if err := s.Redis.HSet(ctx, metaKey(c.ID), "start", start.UnixMilli(), "end", end.UnixMilli()).Err(); err != nil {
		return nil, fmt.Errorf("update coupon window in redis: %w", err)
	}
	if !old.Equal(start) {
		if err := s.rescheduleReminders(ctx, c, old); err != nil {
			return nil, err
		}
	}
	return c, s.fillLive(ctx, []*model.Coupon{c})
}

func (s *Service) rescheduleReminders(ctx context.Context, c *model.Coupon, oldStart time.Time) error {
	for _, m := range model.LeadTimeList() {
		id := tasks.CouponRemindTaskID(tasks.CouponRemindPayload{CouponID: c.ID, GrabStartAt: oldStart.UTC(), MinutesBefore: m})
		if err := s.Queue.DeleteTask(tasks.CouponRemindQueue, id); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
			s.Log.Warn("delete old reminder task", "task", id, "err", err)
		}
	}
	counts, err := s.bookingCounts(ctx, c.ID)
	if err != nil {
		return err
	}
	booked := map[int]bool{}
	for _, bc := range counts {
		if bc.Count > 0 {
			booked[bc.MinutesBefore] = true
		}
	}
	if !s.Now().Before(c.GrabStartAt) {
		return nil // the window is open: a reminder would come too late
	}
	// A lead time whose new reminder time has passed fires at once: the start is still ahead.
	for _, m := range model.LeadTimeList() {
		if booked[m] {
			if err := s.scheduleReminder(ctx, c.ID, c.GrabStartAt, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureWindow is how far ahead EnsureReminderTasks looks: past the longest
// lead time, so every reminder's task is back before it is due.
const ensureWindow = model.MaxLeadTime*time.Minute + 5*time.Minute

// EnsureReminderTasks schedules again the fan-out tasks of templates opening
// within the next hour or so, for every lead time someone booked. It is a
// no-op while Redis holds them (their IDs are taken); after Redis lost them
// (an embedded Redis restarted, a restore from an old snapshot) it brings them
// back, and a reminder whose time passed meanwhile goes out at once; the
// recorded deliveries keep anyone from getting it twice.
func (s *Service) EnsureReminderTasks(ctx context.Context) error {
	now := s.Now()
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT id, grab_start_ms FROM coupons WHERE grab_start_ms > ? AND grab_start_ms <= ?`,
		now.UnixMilli(), now.Add(ensureWindow).UnixMilli())
	if err != nil {
		return err
	}
	type upcoming struct {
		id    int64
		start time.Time
	}
	var cs []upcoming
	for rows.Next() {
		var u upcoming
		var start int64
		if err := rows.Scan(&u.id, &start); err != nil {
			rows.Close()
			return err
		}
		u.start = fromMS(start)
		cs = append(cs, u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var errs []error
	for _, c := range cs {
		var booked int64
		dr, err := s.SQL.R.QueryContext(ctx, `SELECT DISTINCT bits FROM coupon_reminders WHERE template_id = ?`, c.id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for dr.Next() {
			var b int64
			if dr.Scan(&b) == nil {
				booked |= b
			}
		}
		dr.Close()
		for _, m := range model.LeadTimeList() {
			if booked&LeadTimeMask(m) != 0 {
				errs = append(errs, s.scheduleReminder(ctx, c.id, c.start, m))
			}
		}
	}
	return errors.Join(errs...)
}
