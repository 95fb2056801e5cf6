package views

import (
	"fmt"
	"strings"
	"time"

	"github.com/seckill/seckill/db/model"
)

// Picker is one item's "Remind me": the grid of lead times and channels
// that coupons and seckill goods share (ReminderPicker), booked and
// cancelled through the item's reminders API by static/remind_picker.js.
type Picker struct {
	Kind     string            // "coupon" or "goods"
	ID       int64             // the coupon template or the goods
	StartAt  time.Time         // when the item opens: reminders count back from it
	Now      time.Time         // the shop's clock, for lead times already past
	Channels map[string]string // channel → why it cannot be booked ("" when it can)
	Booked   []model.BookedReminder
}

// CouponPicker is the picker of a coupon in the coupon centre.
func CouponPicker(centre *model.CouponCentre, c *model.Coupon) Picker {
	return Picker{Kind: "coupon", ID: c.ID, StartAt: c.GrabStartAt, Now: centre.Now, Channels: centre.Channels, Booked: centre.Reminders[c.ID]}
}

// testid is the picker's data-testid for part: the coupon centre's names as
// they were ("picker-7"), goods' with a "goods-" in front.
func (p Picker) testid(part string, rest ...any) string {
	if p.Kind == "goods" {
		part = "goods-" + part
	}
	return testid(append([]any{part, p.ID}, rest...)...)
}

// apiPath is the item's reminders API.
func (p Picker) apiPath() string {
	if p.Kind == "goods" {
		return fmt.Sprintf("/api/goods/%d/reminders", p.ID)
	}
	return fmt.Sprintf("/api/coupons/%d/reminders", p.ID)
}

// key names the picker's parts for the script, unique across kinds.
func (p Picker) key() string { return p.Kind + "-" + i64(p.ID) }

// tooLate reports whether a reminder minutes before the start can no longer be booked.
func (p Picker) tooLate(minutes int) bool { return !p.Now.Before(model.RemindAt(p.StartAt, minutes)) }

// problem says why a cell is disabled, or "" when it may be toggled.
func (p Picker) problem(minutes int, channel string) string {
	if p.tooLate(minutes) {
		return "too late for this reminder"
	}
	return p.Channels[channel]
}

// notes say, beside the grid, why some of its cells cannot be booked: lead
// times already past and channels not set up.
func (p Picker) notes() []string {
	var notes []string
	for _, m := range model.LeadTimeList() {
		if p.tooLate(m) {
			notes = append(notes, fmt.Sprintf("Reminders %d minutes or more before the start are too late: it opens sooner than that.", m))
			break
		}
	}
	// Channels refused for the same reason share one note.
	var reasons []string
	byReason := map[string][]string{}
	for _, ch := range model.Channels {
		if why := p.Channels[ch]; why != "" {
			if byReason[why] == nil {
				reasons = append(reasons, why)
			}
			byReason[why] = append(byReason[why], channelLabel(ch))
		}
	}
	for _, why := range reasons {
		notes = append(notes, strings.Join(byReason[why], ", ")+": "+why)
	}
	return notes
}
