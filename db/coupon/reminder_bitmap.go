package coupon

import (
	"fmt"
	"math/bits"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/model"
)

// reminderBits is how many bits of the int64 a bitmap uses: bits 0..59,
// one per (channel, lead time).
const reminderBits = model.LeadTimes * 5

// ReminderBitsMask has every bit a valid bitmap may set.
const ReminderBitsMask int64 = 1<<reminderBits - 1

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
	return minutes >= model.LeadStep && minutes <= model.MaxLeadTime && minutes%model.LeadStep == 0
}

// ReminderBit returns the bit of (minutes, channel): channel*12 + minutes/5 - 1.
func ReminderBit(minutes int, channel string) (int64, error) {
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

// EncodeReminders folds reminders into one bitmap; any invalid pair refuses the whole set.
func EncodeReminders(rs []Reminder) (int64, error) {
	var b int64
	for _, r := range rs {
		bit, err := ReminderBit(r.MinutesBefore, r.Channel)
		if err != nil {
			return 0, err
		}
		b |= bit
	}
	return b, nil
}

// DecodeReminders lists the reminders of a bitmap ordered by lead time, then
// channel; a bitmap with bits outside the 60 valid ones is refused.
func DecodeReminders(b int64) ([]Reminder, error) {
	if b&^ReminderBitsMask != 0 {
		return nil, fmt.Errorf("reminder bitmap %#x has bits beyond bit %d", uint64(b), reminderBits-1)
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
