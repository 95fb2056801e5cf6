package remind

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// Bits is how many bits of the int64 a bitmap uses: bits 0..59, one per
// (channel, lead time).
const Bits = model.LeadTimes * 5

// BitsMask has every bit a valid bitmap may set.
const BitsMask int64 = 1<<Bits - 1

// Reminder is one booked (lead time, channel) pair.
type Reminder struct {
	MinutesBefore int    `json:"minutes_before"`
	Channel       string `json:"channel"`
}

// ChannelIndex returns the channel's number, or -1 when it is unknown.
func ChannelIndex(channel string) int {
	for i, c := range model.Channels {
		if c == channel {
			return i
		}
	}
	return -1
}

// ValidLeadTime reports whether minutes is one of 5, 10, … 60.
func ValidLeadTime(minutes int) bool {
	return minutes >= int(model.ReminderLead.Min) && minutes <= int(model.ReminderLead.Max) && minutes%model.LeadStep == 0
}

// Bit returns the bit of (minutes, channel): channel*12 + minutes/5 - 1.
func Bit(minutes int, channel string) (int64, error) {
	if !ValidLeadTime(minutes) {
		return 0, db.FieldErrorf("minutes_before", "must be one of 5, 10, … 60")
	}
	ch := ChannelIndex(channel)
	if ch < 0 {
		return 0, db.FieldErrorf("channel", "must be one of app, email, webhook, sms, wechat")
	}
	return 1 << (ch*model.LeadTimes + minutes/model.LeadStep - 1), nil
}

// LeadTimeMask has the bits of minutes on every channel, for scanning one reminder time.
func LeadTimeMask(minutes int) int64 {
	if !ValidLeadTime(minutes) {
		return 0
	}
	var m int64
	for ch := range model.Channels {
		m |= 1 << (ch*model.LeadTimes + minutes/model.LeadStep - 1)
	}
	return m
}

// Encode folds reminders into one bitmap; any invalid pair refuses the whole set.
func Encode(rs []Reminder) (int64, error) {
	var b int64
	for _, r := range rs {
		bit, err := Bit(r.MinutesBefore, r.Channel)
		if err != nil {
			return 0, err
		}
		b |= bit
	}
	return b, nil
}

// Decode lists the reminders of a bitmap ordered by lead time, then
// channel; a bitmap with bits outside the 60 valid ones is refused.
func Decode(b int64) ([]Reminder, error) {
	if b&^BitsMask != 0 {
		return nil, fmt.Errorf("reminder bitmap %#x has bits beyond bit %d", uint64(b), Bits-1)
	}
	out := make([]Reminder, 0, bits.OnesCount64(uint64(b)))
	for lead := 0; lead < model.LeadTimes; lead++ {
		for ch, name := range model.Channels {
			if b&(1<<(ch*model.LeadTimes+lead)) != 0 {
				out = append(out, Reminder{MinutesBefore: (lead + 1) * model.LeadStep, Channel: name})
			}
		}
	}
	return out, nil
}

// Expand decodes a stored bitmap into reminders due before start.
func Expand(bits int64, start time.Time) ([]model.BookedReminder, error) {
	rs, err := Decode(bits)
	if err != nil {
		return nil, err
	}
	out := make([]model.BookedReminder, len(rs))
	for i, r := range rs {
		out[i] = model.BookedReminder{MinutesBefore: r.MinutesBefore, Channel: r.Channel, RemindAt: model.RemindAt(start, r.MinutesBefore)}
	}
	return out, nil
}
