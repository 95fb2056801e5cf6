// Package remind is the booking machinery every area's "remind me" runs on:
// a user's reminders for one subject (a coupon template, a seckill goods) in
// one bitmap row, one fan-out task per (subject, start time, lead time),
// tasks moved when the subject's start moves and brought back when Redis
// lost them, and the app channel's delivery into the inbox, recorded so a
// booking is delivered once however often its task runs. The area supplies
// what differs: its tables, how to find a subject and its start, which
// channels a user may book, its task, and the message.
package remind

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/backend"
	"github.com/seckill/seckill/db/model"
)

// Subject is what reminders count down to: one coupon template's grab
// window, one goods' sale, identified within its area, and when it starts.
type Subject struct {
	ID    int64
	Title string
	Start time.Time
}

// Table names an area's bookings and deliveries. Bookings has the columns
// user_id, <Subject>, bits, <Start>, updated_ms and Extra, primary key
// (user_id, <Subject>); Deliveries has <Subject>, <Start>, minutes_before,
// channel, user_id, status, attempts, created_ms, sent_ms, primary key over
// the first five.
type Table struct {
	Bookings   string
	Deliveries string
	Subject    string // the subject's column in both tables
	Start      string // the start's column (unix ms) in both tables
	// Source selects, from one subject by its ID (the one ?), the subject's
	// ID, its start (unix ms) and the Extra columns, in that order:
	// "id, grab_start_ms, shop_id FROM coupons WHERE id = ?".
	Source string
	Extra  []string
	// Titles joins the bookings (alias r) to their subject's title, and
	// Title is that column: "coupons c ON c.id = r.template_id", "c.title".
	Titles, Title string
	// Upcoming selects the ID and start of every subject starting in the
	// window (?, ?]: "id, grab_start_ms FROM coupons WHERE grab_start_ms > ? AND grab_start_ms <= ?".
	Upcoming string
}

// Store books, lists, reschedules and fans out one area's reminders.
type Store struct {
	*backend.Backend
	Table
	// Find returns a subject by ID, or a db.ENOTFOUND error.
	Find func(ctx context.Context, id int64) (Subject, error)
	// ChannelProblem says why the user cannot book a channel, "" when they can.
	ChannelProblem func(ctx context.Context, userID int64, channel string) (string, error)
	// Task is the fan-out of one reminder time of a subject, due at that
	// time, with an ID unique per (subject, start, minutes); TaskID is that
	// ID and TaskQueue its queue, to delete it when the start moves.
	Task      func(subjectID int64, start time.Time, minutes int) *asynq.Task
	TaskID    func(subjectID int64, start time.Time, minutes int) string
	TaskQueue string
}

func fromMS(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// Book sets the user's reminder minutes before the subject's start on
// channel and returns all the user's reminders for the subject.
func (s *Store) Book(ctx context.Context, userID, id int64, minutes int, channel string) ([]model.BookedReminder, error) {
	bit, err := Bit(minutes, channel)
	if err != nil {
		return nil, err
	}
	subj, err := s.Find(ctx, id)
	if err != nil {
		return nil, err
	}
	if !s.Now().Before(model.RemindAt(subj.Start, minutes)) {
		return nil, db.Errorf(db.ETOOLATE, "it is too late for a reminder %d minutes before the start", minutes)
	}
	if problem, err := s.ChannelProblem(ctx, userID, channel); err != nil {
		return nil, err
	} else if problem != "" {
		return nil, db.Errorf(db.ENOTCONFIGURED, "%s", problem)
	}
	// The task first: one with no bookings does nothing when it runs, while
	// a booking whose task was never scheduled would never be sent.
	if err := s.schedule(ctx, subj.ID, subj.Start, minutes); err != nil {
		return nil, err
	}
	// Start (and Extra) come from the subject's row inside the statement,
	// read under a share lock (PostgreSQL), so a booking racing a reschedule
	// either waits for it and stores the new time, or commits first and is
	// moved by it: it stores the time the tasks were moved to.
	cols := append([]string{s.Subject, s.Start}, s.Extra...)
	var bits, start int64
	err = s.SQL.W.QueryRowContext(ctx, `INSERT INTO `+s.Bookings+` (user_id, bits, updated_ms, `+strings.Join(cols, ", ")+`)
		SELECT ?, ?, ?, `+s.Source+s.SQL.Dialect.ForShare()+`
		ON CONFLICT (user_id, `+s.Subject+`) DO UPDATE SET bits = `+s.Bookings+`.bits | excluded.bits, updated_ms = excluded.updated_ms
		RETURNING bits, `+s.Start, userID, bit, s.Now().UnixMilli(), subj.ID).Scan(&bits, &start)
	if err != nil {
		return nil, fmt.Errorf("book reminder: %w", err)
	}
	// The start moved between the look-up and the insert, and the move's
	// Reschedule may have found no booking to schedule: the task of the
	// start stored is this booking's to make.
	if start != subj.Start.UnixMilli() {
		if err := s.schedule(ctx, subj.ID, fromMS(start), minutes); err != nil {
			return nil, err
		}
	}
	return Expand(bits, fromMS(start))
}

// Cancel clears one reminder and returns the user's remaining ones for the subject.
func (s *Store) Cancel(ctx context.Context, userID, id int64, minutes int, channel string) ([]model.BookedReminder, error) {
	bit, err := Bit(minutes, channel)
	if err != nil {
		return nil, err
	}
	if _, err := s.Find(ctx, id); err != nil {
		return nil, err
	}
	var bits, start int64
	err = s.SQL.W.QueryRowContext(ctx, `UPDATE `+s.Bookings+` SET bits = bits & ~CAST(? AS BIGINT), updated_ms = ?
		WHERE user_id = ? AND `+s.Subject+` = ? RETURNING bits, `+s.Start,
		bit, s.Now().UnixMilli(), userID, id).Scan(&bits, &start)
	if errors.Is(err, sql.ErrNoRows) {
		return []model.BookedReminder{}, nil
	} else if err != nil {
		return nil, fmt.Errorf("cancel reminder: %w", err)
	}
	if bits == 0 {
		if _, err := s.SQL.W.ExecContext(ctx, `DELETE FROM `+s.Bookings+` WHERE user_id = ? AND `+s.Subject+` = ? AND bits = 0`, userID, id); err != nil {
			return nil, err
		}
	}
	return Expand(bits, fromMS(start))
}

// Reminders lists the user's reminders for one subject.
func (s *Store) Reminders(ctx context.Context, userID, id int64) ([]model.BookedReminder, error) {
	subj, err := s.Find(ctx, id)
	if err != nil {
		return nil, err
	}
	bits, err := s.Bits(ctx, userID, id)
	if err != nil {
		return nil, err
	}
	return Expand(bits, subj.Start)
}

// Bits is the user's bitmap for one subject (0: none booked).
func (s *Store) Bits(ctx context.Context, userID, id int64) (int64, error) {
	var bits int64
	err := s.SQL.R.QueryRowContext(ctx, `SELECT bits FROM `+s.Bookings+` WHERE user_id = ? AND `+s.Subject+` = ?`, userID, id).Scan(&bits)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	return bits, nil
}

// UserReminders lists every reminder the user booked in this table, soonest
// first; name sets the subject's ID and title on each (the field it goes in is the area's).
func (s *Store) UserReminders(ctx context.Context, userID int64, name func(r *model.BookedReminder, id int64, title string)) ([]model.BookedReminder, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT r.`+s.Subject+`, r.bits, r.`+s.Start+`, `+s.Title+` FROM `+s.Bookings+` r
		JOIN `+s.Titles+` WHERE r.user_id = ? AND r.bits != 0 ORDER BY r.`+s.Subject, userID)
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
		rs, err := Expand(bits, fromMS(start))
		if err != nil {
			return nil, fmt.Errorf("reminders of user %d in %s for %d: %w", userID, s.Bookings, id, err)
		}
		for _, r := range rs {
			name(&r, id, title)
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RemindAt.Before(out[j].RemindAt) })
	return out, rows.Err()
}

// schedule makes sure the fan-out task of (subject, start, lead time)
// exists; its task ID makes every booking after the first a no-op.
func (s *Store) schedule(ctx context.Context, id int64, start time.Time, minutes int) error {
	if s.Tasks == nil {
		return fmt.Errorf("schedule reminder: no task client")
	}
	if err := s.Schedule(ctx, s.Task(id, start.UTC(), minutes)); err != nil {
		return fmt.Errorf("schedule reminder of %s %d at %d minutes: %w", s.Subject, id, minutes, err)
	}
	return nil
}

// BookingCounts counts bookings per (lead time, channel) of a subject in one scan.
func (s *Store) BookingCounts(ctx context.Context, id int64) ([]model.BookingCount, error) {
	q := "SELECT "
	for bit := 0; bit < Bits; bit++ {
		if bit > 0 {
			q += ", "
		}
		q += fmt.Sprintf("COALESCE(SUM((bits >> %d) & 1), 0)", bit)
	}
	q += " FROM " + s.Bookings + " WHERE " + s.Subject + " = ?"
	counts := make([]int64, Bits)
	dest := make([]any, Bits)
	for i := range counts {
		dest[i] = &counts[i]
	}
	if err := s.SQL.R.QueryRowContext(ctx, q, id).Scan(dest...); err != nil {
		return nil, fmt.Errorf("count bookings of %s %d: %w", s.Subject, id, err)
	}
	out := []model.BookingCount{}
	for _, m := range model.LeadTimeList() {
		for ch, name := range model.Channels {
			out = append(out, model.BookingCount{MinutesBefore: m, Channel: name, Count: counts[ch*model.LeadTimes+m/model.LeadStep-1]})
		}
	}
	return out, nil
}

// booked is every bit anyone booked for a subject.
func (s *Store) booked(ctx context.Context, id int64) (int64, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT DISTINCT bits FROM `+s.Bookings+` WHERE `+s.Subject+` = ?`, id)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var booked int64
	for rows.Next() {
		var b int64
		if err := rows.Scan(&b); err != nil {
			return 0, err
		}
		booked |= b
	}
	return booked, rows.Err()
}

// MoveStart records in the bookings, inside tx, that the subjects matching
// where (with args) start at start now; the area calls it in the
// transaction that moves them, then Reschedule.
func (s *Store) MoveStart(ctx context.Context, tx *sql.Tx, start time.Time, where string, args ...any) error {
	_, err := tx.ExecContext(ctx, `UPDATE `+s.Bookings+` SET `+s.Start+` = ? WHERE `+where, append([]any{start.UnixMilli()}, args...)...)
	return err
}

// Reschedule moves a subject's fan-out tasks from oldStart to its new
// start: the old ones are deleted (one still running finds the start
// changed and does nothing) and new ones scheduled for every booked lead
// time, unless the subject has started. A lead time whose new reminder
// time has passed fires at once: the start is still ahead.
func (s *Store) Reschedule(ctx context.Context, id int64, oldStart, start time.Time) error {
	if oldStart.Equal(start) {
		return nil
	}
	booked, err := s.booked(ctx, id)
	if err != nil || booked == 0 {
		return err // no bookings: no tasks to move
	}
	for _, m := range model.LeadTimeList() {
		tid := s.TaskID(id, oldStart.UTC(), m)
		if err := s.Queue.DeleteTask(s.TaskQueue, tid); err != nil && !errors.Is(err, asynq.ErrTaskNotFound) && !errors.Is(err, asynq.ErrQueueNotFound) {
			s.Log.Warn("delete old reminder task", "task", tid, "err", err)
		}
	}
	if !s.Now().Before(start) {
		return nil // started: a reminder would come too late
	}
	for _, m := range model.LeadTimeList() {
		if booked&LeadTimeMask(m) != 0 {
			if err := s.schedule(ctx, id, start, m); err != nil {
				return err
			}
		}
	}
	return nil
}
