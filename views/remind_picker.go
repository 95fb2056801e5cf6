package views

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/seckill/seckill/db/model"
)

// Picker is one item's "Remind me": the lead times and channels that
// coupons and seckill goods share (ReminderPicker), booked and
// cancelled through the item's reminders API by static/remind_picker.js.
type Picker struct {
	Kind     string            // "coupon" or "goods"
	ID       int64             // the coupon template or the goods
	StartAt  time.Time         // when the item opens: reminders count back from it
	Now      time.Time         // the shop's clock, for lead times already past
	Channels map[string]string // channel → why it cannot be booked ("" when it can)
	Booked   []model.BookedReminder
	// FetchOwn: Booked is not known (the page is every shopper's): the
	// script reads the reader's reminders from the item's API.
	FetchOwn bool
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

// leadTimes are the lead times that may still be booked, shortest first.
func (p Picker) leadTimes() []int {
	var out []int
	for _, m := range model.LeadTimeList() {
		if !p.tooLate(m) {
			out = append(out, m)
		}
	}
	return out
}

// offered are the channels the user may book reminders on for the item.
func (p Picker) offered() []string {
	var out []string
	for _, ch := range model.Channels {
		if p.Channels[ch] == "" {
			out = append(out, ch)
		}
	}
	return out
}

// notes say, under the picker, why it offers fewer lead times or channels
// than there are: lead times already past and channels not set up.
func (p Picker) notes(ctx context.Context) []string {
	var notes []string
	for _, m := range model.LeadTimeList() {
		if p.tooLate(m) {
			notes = append(notes, F(ctx, "Reminders %d minutes or more before the start are too late: it opens sooner than that.", m))
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
			byReason[why] = append(byReason[why], T(ctx, channelLabel(ch)))
		}
	}
	for _, why := range reasons {
		notes = append(notes, F(ctx, "Not offered here: %s (%s)", strings.Join(byReason[why], " / "), T(ctx, why)))
	}
	return notes
}

// ready is a data-ready value: "1" when the section is drawn in full, "0"
// while its script still fetches the reader's own part.
func ready(done bool) string {
	if done {
		return "1"
	}
	return "0"
}
