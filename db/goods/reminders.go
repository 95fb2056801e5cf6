package goods

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

// reminderTable is where goods reminders are booked and delivered; a
// goods' reminders count down to its slot's start.
var reminderTable = remind.Table{
	Bookings: "goods_reminders", Deliveries: "goods_reminder_deliveries", Subject: "goods_id", Start: "start_ms",
	Source: "g.id, s.start_ms FROM goods g JOIN slots s ON s.id = g.slot_id WHERE g.id = ?",
	Titles: "goods g ON g.id = r.goods_id", Title: "g.title",
	// The bookings know their start (moved with the slot): the periodic
	// check reads them alone, through goods_reminders_start.
	Upcoming: "DISTINCT goods_id, start_ms FROM goods_reminders WHERE start_ms > ? AND start_ms <= ?",
}

// reminderChannels are the channels goods reminders go out on.
var reminderChannels = []string{model.ChannelApp}

// reminders is the booking machinery of db/remind for goods.
func (s *Service) ReminderStore() *remind.Store {
	return &remind.Store{
		Backend: s.Backend, Table: reminderTable,
		Find: func(ctx context.Context, id int64) (remind.Subject, error) {
			g, err := s.GoodsRow(ctx, id)
			if err != nil {
				return remind.Subject{}, err
			}
			return remind.Subject{ID: g.ID, Title: g.Title, Start: g.StartAt}, nil
		},
		ChannelProblem: func(_ context.Context, _ int64, channel string) (string, error) {
			return ReminderChannelProblem(channel), nil
		},
		Task: func(id int64, start time.Time, minutes int) *asynq.Task {
			return tasks.NewGoodsRemindTask(tasks.GoodsRemindPayload{GoodsID: id, StartAt: start, MinutesBefore: minutes})
		},
		TaskID: func(id int64, start time.Time, minutes int) string {
			return tasks.GoodsRemindTaskID(tasks.GoodsRemindPayload{GoodsID: id, StartAt: start, MinutesBefore: minutes})
		},
		TaskQueue: tasks.GoodsRemindQueue,
	}
}

// ReminderChannelProblem says why goods reminders cannot go out on a
// channel, or "" when they can: only the app channel carries them.
func ReminderChannelProblem(channel string) string {
	if channel == model.ChannelApp {
		return ""
	}
	return model.ChannelName(channel) + " reminders are not available for seckill goods: choose the app"
}

// BookReminder sets the user's reminder minutes before the goods' sale
// starts on channel and returns all the user's reminders for the goods.
func (s *Service) BookReminder(ctx context.Context, userID, goodsID int64, minutes int, channel string) ([]model.BookedReminder, error) {
	return s.ReminderStore().Book(ctx, userID, goodsID, minutes, channel)
}

// CancelReminder clears one reminder and returns the user's remaining ones for the goods.
func (s *Service) CancelReminder(ctx context.Context, userID, goodsID int64, minutes int, channel string) ([]model.BookedReminder, error) {
	return s.ReminderStore().Cancel(ctx, userID, goodsID, minutes, channel)
}

// Reminders lists the user's reminders for one goods.
func (s *Service) Reminders(ctx context.Context, userID, goodsID int64) ([]model.BookedReminder, error) {
	return s.ReminderStore().Reminders(ctx, userID, goodsID)
}

// UserReminders lists every goods reminder the user booked, soonest first.
func (s *Service) UserReminders(ctx context.Context, userID int64) ([]model.BookedReminder, error) {
	return s.ReminderStore().UserReminders(ctx, userID, func(r *model.BookedReminder, id int64, title string) {
		r.GoodsID, r.Title = id, title
	})
}

// EnsureReminderTasks brings back the fan-out tasks of goods starting
// within the hour that Redis lost.
func (s *Service) EnsureReminderTasks(ctx context.Context) error {
	return s.ReminderStore().Ensure(ctx)
}

// ReminderText is the message of a goods reminder.
func ReminderText(title string, start time.Time, minutes int) string {
	return fmt.Sprintf("“%s” goes on sale in %d minutes, at %s.", title, minutes, start.UTC().Format(model.TimeLayout)+" UTC")
}

// SendReminders runs one reminder time of a goods: every booking with the
// lead time's bit set gets one inbox message, recorded so a task run again
// sends nothing twice. A task from before the slot moved finds the start
// changed and does nothing.
func (s *Service) SendReminders(ctx context.Context, p tasks.GoodsRemindPayload) error {
	g, err := s.GoodsRow(ctx, p.GoodsID)
	if db.ErrorCode(err) == db.ENOTFOUND {
		s.Log.Warn("reminder for goods that do not exist", "goods", p.GoodsID)
		return nil
	} else if err != nil {
		return err
	}
	if !g.StartAt.Equal(p.StartAt) || !remind.ValidLeadTime(p.MinutesBefore) {
		return nil
	}
	st := s.ReminderStore()
	subj := remind.Subject{ID: g.ID, Title: g.Title, Start: g.StartAt}
	n := model.Notification{Kind: model.NotificationGoodsReminder, GoodsID: g.ID, Message: ReminderText(g.Title, g.StartAt, p.MinutesBefore)}
	return st.Page(ctx, g.ID, p.MinutesBefore, reminderChannels, func(byChannel map[string][]int64) error {
		return st.SendApp(ctx, subj, p.MinutesBefore, byChannel[model.ChannelApp], n)
	})
}

// moveReminders records, in the transaction that moves a slot, that the
// reminders of its goods count down to the new start.
func (s *Service) moveReminders(ctx context.Context, tx *sql.Tx, slotID int64, start time.Time) error {
	return s.ReminderStore().MoveStart(ctx, tx, start, `goods_id IN (SELECT id FROM goods WHERE slot_id = ?)`, slotID)
}

// rescheduleReminders moves the fan-out tasks of a moved slot's goods.
func (s *Service) rescheduleReminders(ctx context.Context, goods []model.Goods, oldStart time.Time) error {
	st := s.ReminderStore()
	for _, g := range goods {
		if err := st.Reschedule(ctx, g.ID, oldStart, g.StartAt); err != nil {
			return fmt.Errorf("move reminders of goods %d: %w", g.ID, err)
		}
	}
	return nil
}
