package remind

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/seckill/seckill/db/inbox"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/sqldb"
)

// PageSize is how many bookings one page of a fan-out holds (one
// transaction of the store for the app channel).
const PageSize = 1000

// Page walks the bookings with the lead time's bit set on any channel, a
// page at a time in user order, and hands each page's users by channel to
// send; channels not listed are left out.
func (s *Store) Page(ctx context.Context, id int64, minutes int, channels []string, send func(byChannel map[string][]int64) error) error {
	mask := LeadTimeMask(minutes)
	if mask == 0 {
		return nil
	}
	lead := minutes/model.LeadStep - 1
	var after int64
	for {
		rows, err := s.SQL.R.QueryContext(ctx, `SELECT user_id, bits FROM `+s.Bookings+`
			WHERE `+s.Subject+` = ? AND user_id > ? AND bits & ? != 0 ORDER BY user_id LIMIT ?`, id, after, mask, PageSize)
		if err != nil {
			return fmt.Errorf("page reminders of %s %d: %w", s.Subject, id, err)
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
			for _, ch := range channels {
				if bits&(1<<(ChannelIndex(ch)*model.LeadTimes+lead)) != 0 {
					byChannel[ch] = append(byChannel[ch], uid)
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if err := send(byChannel); err != nil {
			return err
		}
		if n < PageSize {
			return nil
		}
	}
}

// SendApp records the app deliveries of a page and their inbox rows (n's
// kind, subject and message) in one transaction, then pushes the new
// notifications live in one pipeline. A user whose delivery is recorded
// already (an earlier run of the task) gets nothing.
func (s *Store) SendApp(ctx context.Context, subj Subject, minutes int, users []int64, n model.Notification) error {
	if len(users) == 0 {
		return nil
	}
	now := s.Now().UTC()
	at, start := now.UnixMilli(), subj.Start.UnixMilli()
	var sent map[int64]model.Notification
	err := s.SQL.Tx(ctx, func(tx *sql.Tx) error {
		// Two set-based statements over the staged page: the deliveries not
		// recorded yet (a row there means an earlier run of this task sent
		// it), then their inbox rows.
		if err := s.SQL.Stage(ctx, tx, "reminder_page", PageColumns, UserRows(users, nil)); err != nil {
			return err
		}
		fresh, err := sqldb.IDs(ctx, tx, `INSERT INTO `+s.Deliveries+`
			(`+s.Subject+`, `+s.Start+`, minutes_before, channel, user_id, status, attempts, created_ms, sent_ms)
			SELECT ?, ?, ?, 'app', p.user_id, 'sent', 1, ?, ? FROM reminder_page AS p WHERE true
			ON CONFLICT DO NOTHING RETURNING user_id`, subj.ID, start, minutes, at, at)
		if err != nil || len(fresh) == 0 {
			return err
		}
		slices.Sort(fresh) // the inbox rows in the page's order
		n.CreatedAt = now
		sent, err = inbox.Add(ctx, tx, fresh, n)
		return err
	})
	if err != nil {
		return fmt.Errorf("record app reminders of %s %d: %w", s.Subject, subj.ID, err)
	}
	if err := s.Events.PublishAll(ctx, inbox.Messages(sent)); err != nil {
		s.Log.Warn("push reminders live", s.Subject, subj.ID, "err", err) // the inbox has them
	}
	return nil
}

// PageColumns are the columns of a staged page of bookings: the user and,
// for an email or webhook, the status and lease its delivery starts with.
var PageColumns = []sqldb.Column{{Name: "user_id", Type: "BIGINT"}, {Name: "status", Type: "TEXT"}, {Name: "lease_until_ms", Type: "BIGINT"}}

// UserRows are staged rows of PageColumns, status and lease from state (nil: none).
func UserRows(users []int64, state func(uid int64) (string, any)) [][]any {
	rows := make([][]any, len(users))
	for i, uid := range users {
		status, lease := "", any(nil)
		if state != nil {
			status, lease = state(uid)
		}
		rows[i] = []any{uid, status, lease}
	}
	return rows
}

// EnsureWindow is how far ahead Ensure looks: past the longest lead time,
// so every reminder's task is back before it is due.
const EnsureWindow = model.MaxLeadTime*time.Minute + 5*time.Minute

// Ensure schedules again the fan-out tasks of subjects starting within
// EnsureWindow, for every lead time someone booked. It is a no-op while
// Redis holds them (their IDs are taken); after Redis lost them (an embedded
// Redis restarted, a restore from an old snapshot) it brings them back, and a
// reminder whose time passed meanwhile goes out at once; the recorded
// deliveries keep anyone from getting it twice.
func (s *Store) Ensure(ctx context.Context) error {
	now := s.Now()
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT `+s.Upcoming, now.UnixMilli(), now.Add(EnsureWindow).UnixMilli())
	if err != nil {
		return err
	}
	var subjects []Subject
	for rows.Next() {
		var u Subject
		var start int64
		if err := rows.Scan(&u.ID, &start); err != nil {
			rows.Close()
			return err
		}
		u.Start = fromMS(start)
		subjects = append(subjects, u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var errs []error
	for _, u := range subjects {
		booked, err := s.booked(ctx, u.ID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, m := range model.LeadTimeList() {
			if booked&LeadTimeMask(m) != 0 {
				errs = append(errs, s.schedule(ctx, u.ID, u.Start, m))
			}
		}
	}
	return errors.Join(errs...)
}
