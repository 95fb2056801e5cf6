package coupon

import "github.com/seckill/seckill/db/remind"

// The reminder bitmap is shared with every area that books reminders
// (db/remind); these names keep the coupon area's own vocabulary.

// ReminderBitsMask has every bit a valid bitmap may set.
const ReminderBitsMask = remind.BitsMask

// Reminder is one booked (lead time, channel) pair.
type Reminder remind.Reminder

// Bitmap rules of db/remind under the coupon area's names.
var (
	ChannelIndex  = remind.ChannelIndex
	ValidLeadTime = remind.ValidLeadTime
	ReminderBit   = remind.Bit
	LeadTimeMask  = remind.LeadTimeMask
)

// EncodeReminders folds reminders into one bitmap; any invalid pair refuses the whole set.
func EncodeReminders(rs []Reminder) (int64, error) {
	out := make([]remind.Reminder, len(rs))
	for i, r := range rs {
		out[i] = remind.Reminder(r)
	}
	return remind.Encode(out)
}

// DecodeReminders lists the reminders of a bitmap ordered by lead time, then
// channel; a bitmap with bits outside the 60 valid ones is refused.
func DecodeReminders(b int64) ([]Reminder, error) {
	rs, err := remind.Decode(b)
	if err != nil {
		return nil, err
	}
	out := make([]Reminder, len(rs))
	for i, r := range rs {
		out[i] = Reminder(r)
	}
	return out, nil
}
