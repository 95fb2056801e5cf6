package coupon

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/remind"
	"github.com/seckill/seckill/tasks"
)

// reminderTable is where coupon reminders are booked and delivered.
var reminderTable = remind.Table{
	Bookings: "coupon_reminders", Deliveries: "reminder_deliveries", Subject: "template_id", Start: "grab_start_ms",
	Source: "id, grab_start_ms, shop_id FROM coupons WHERE id = ?", Extra: []string{"shop_id"},
	Titles: "coupons c ON c.id = r.template_id", Title: "c.title",
	Upcoming: "id, grab_start_ms FROM coupons WHERE grab_start_ms > ? AND grab_start_ms <= ?",
}

// reminders is the booking machinery of db/remind for coupon templates.
func (s *Service) reminders() *remind.Store {
	return &remind.Store{
		Backend: s.Backend, Table: reminderTable,
		Find: func(ctx context.Context, id int64) (remind.Subject, error) {
			c, err := s.row(ctx, id)
			if err != nil {
				return remind.Subject{}, err
			}
			return remind.Subject{ID: c.ID, Title: c.Title, Start: c.GrabStartAt}, nil
		},
		ChannelProblem: s.ChannelProblem,
		Task: func(id int64, start time.Time, minutes int) *asynq.Task {
			return tasks.NewCouponRemindTask(tasks.CouponRemindPayload{CouponID: id, GrabStartAt: start, MinutesBefore: minutes})
		},
		TaskID: func(id int64, start time.Time, minutes int) string {
			return tasks.CouponRemindTaskID(tasks.CouponRemindPayload{CouponID: id, GrabStartAt: start, MinutesBefore: minutes})
		},
		TaskQueue: tasks.CouponRemindQueue,
	}
}

// ChannelProblem says why the user cannot book reminders on a channel, or "" when they can.
func (s *Service) ChannelProblem(ctx context.Context, userID int64, channel string) (string, error) {
	switch channel {
	case model.ChannelApp:
		return "", nil
	case model.ChannelSMS, model.ChannelWechat:
		return model.ChannelName(channel) + " reminders are not available: no provider is configured", nil
	}
	st, err := s.Settings.UserSettings(ctx, userID)
	if err != nil {
		return "", err
	}
	switch {
	case channel == model.ChannelEmail && s.SMTPURL == "":
		return "Email reminders are not available: no mail server is configured", nil
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
	return s.reminders().Book(ctx, userID, couponID, minutes, channel)
}

// Cancel clears one reminder and returns the user's remaining ones for the template.
func (s *Service) Cancel(ctx context.Context, userID, couponID int64, minutes int, channel string) ([]model.BookedReminder, error) {
	return s.reminders().Cancel(ctx, userID, couponID, minutes, channel)
}

// Reminders lists the user's reminders for one template.
func (s *Service) Reminders(ctx context.Context, userID, couponID int64) ([]model.BookedReminder, error) {
	return s.reminders().Reminders(ctx, userID, couponID)
}

// UserReminders lists every coupon reminder the user has booked, soonest first.
func (s *Service) UserReminders(ctx context.Context, userID int64) ([]model.BookedReminder, error) {
	return s.reminders().UserReminders(ctx, userID, func(r *model.BookedReminder, id int64, title string) {
		r.CouponID, r.Title = id, title
	})
}

// bookingCounts counts bookings per bit of a template in one scan.
func (s *Service) bookingCounts(ctx context.Context, couponID int64) ([]model.BookingCount, error) {
	return s.reminders().BookingCounts(ctx, couponID)
}

// MoveWindow moves a template's grab window. Bookings follow the new
// start: the old fan-out tasks are deleted (one still running finds the start
// changed and does nothing) and new ones scheduled for every booked lead time.
// A zero start or end is one left out: it stays as it is.
func (s *Service) MoveWindow(ctx context.Context, actor model.Claims, couponID int64, start, end time.Time) (_ *model.Coupon, err error) {
	defer s.announce(ctx, &err)
	c, err := s.owned(ctx, actor, couponID)
	if err != nil {
		return nil, err
	}
	now := s.Now()
	if State(c.GrabStartAt, c.GrabEndAt, now) == model.CouponEnded {
		return nil, db.Errorf(db.EENDED, "the grab window of this coupon has ended")
	}
	if start.IsZero() {
		start = c.GrabStartAt
	}
	if end.IsZero() {
		end = c.GrabEndAt
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
		return s.reminders().MoveStart(ctx, tx, start, `template_id = ?`, c.ID)
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
	if err := s.reminders().Reschedule(ctx, c.ID, old, start); err != nil {
		return nil, err
	}
	return c, s.fillLive(ctx, []*model.Coupon{c})
}

// EnsureReminderTasks schedules again the fan-out tasks of templates opening
// within the next hour or so, for every lead time someone booked (see
// remind.Store.Ensure).
func (s *Service) EnsureReminderTasks(ctx context.Context) error {
	return s.reminders().Ensure(ctx)
}
