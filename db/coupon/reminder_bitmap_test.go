package coupon_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/seckill/seckill/db"
	"github.com/seckill/seckill/db/coupon"
	"github.com/seckill/seckill/db/model"
)

// Every lead time on every channel has its own bit: channel*12 + minutes/5 - 1.
func TestReminderBitEveryLeadTimeAndChannel(t *testing.T) {
	seen := map[int64]string{}
	for ch, name := range []string{"app", "email", "webhook", "sms", "wechat"} {
		for i, minutes := range []int{5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60} {
			t.Run(fmt.Sprintf("%s/%d", name, minutes), func(t *testing.T) {
				bit, err := coupon.ReminderBit(minutes, name)
				if err != nil {
					t.Fatal(err)
				}
				if want := int64(1) << (ch*12 + i); bit != want {
					t.Fatalf("bit = %#x, want %#x (bit %d)", bit, want, ch*12+i)
				}
				key := fmt.Sprintf("%s/%d", name, minutes)
				if other, dup := seen[bit]; dup {
					t.Fatalf("%s shares its bit with %s", key, other)
				}
				seen[bit] = key
				got, err := coupon.DecodeReminders(bit)
				want := []coupon.Reminder{{MinutesBefore: minutes, Channel: name}}
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("decode(%#x) = %v, %v; want %v", bit, got, err, want)
				}
				if coupon.LeadTimeMask(minutes)&bit == 0 {
					t.Fatalf("lead time mask of %d misses %s", minutes, key)
				}
			})
		}
	}
	if len(seen) != 60 {
		t.Fatalf("%d distinct bits, want 60", len(seen))
	}
}

func TestReminderBitmapExamples(t *testing.T) {
	tests := []struct {
		name string
		in   []coupon.Reminder
		want int64
	}{
		{"none", nil, 0},
		{"app 5", []coupon.Reminder{{5, "app"}}, 1},
		{"app 60", []coupon.Reminder{{60, "app"}}, 1 << 11},
		{"email 5", []coupon.Reminder{{5, "email"}}, 1 << 12},
		{"webhook 10", []coupon.Reminder{{10, "webhook"}}, 1 << 25},
		{"wechat 60 is the top bit", []coupon.Reminder{{60, "wechat"}}, 1 << 59},
		{"several", []coupon.Reminder{{5, "app"}, {5, "email"}, {30, "sms"}}, 1 | 1<<12 | 1<<(36+5)},
		{"duplicates fold", []coupon.Reminder{{15, "app"}, {15, "app"}}, 1 << 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := coupon.EncodeReminders(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("encode = %#x, %v; want %#x", got, err, tt.want)
			}
		})
	}
}

func TestReminderBitmapRefusesInvalid(t *testing.T) {
	for _, tt := range []struct {
		minutes int
		channel string
	}{
		{0, "app"}, {7, "app"}, {65, "app"}, {-5, "app"}, {4, "app"}, {61, "app"}, {120, "email"},
		{5, ""}, {5, "APP"}, {5, "push"}, {10, "sms "},
	} {
		if _, err := coupon.ReminderBit(tt.minutes, tt.channel); db.ErrorCode(err) != db.EINVALID {
			t.Errorf("ReminderBit(%d, %q) error = %v, want invalid", tt.minutes, tt.channel, err)
		}
		if _, err := coupon.EncodeReminders([]coupon.Reminder{{5, "app"}, {tt.minutes, tt.channel}}); db.ErrorCode(err) != db.EINVALID {
			t.Errorf("EncodeReminders with (%d, %q) error = %v, want invalid", tt.minutes, tt.channel, err)
		}
	}
	for _, b := range []int64{1 << 60, 1 << 62, -1, 1<<63 - 1, 1 | 1<<61} {
		if got, err := coupon.DecodeReminders(b); err == nil {
			t.Errorf("DecodeReminders(%#x) = %v, want an error", uint64(b), got)
		}
	}
	if coupon.LeadTimeMask(7) != 0 {
		t.Error("LeadTimeMask(7) is not empty")
	}
}

// Every one of the 2^60 valid bitmaps survives decode then encode, shown for a spread of them.
func TestReminderBitmapRoundTrip(t *testing.T) {
	for _, b := range []int64{0, 1, coupon.ReminderBitsMask, 0x0AAAAAAAAAAAAAAA, 0x0555555555555555, 1<<59 | 1, 0x0123456789ABCDEF & coupon.ReminderBitsMask} {
		rs, err := coupon.DecodeReminders(b)
		if err != nil {
			t.Fatalf("decode %#x: %v", b, err)
		}
		back, err := coupon.EncodeReminders(rs)
		if err != nil || back != b {
			t.Fatalf("encode(decode(%#x)) = %#x, %v", b, back, err)
		}
		again, _ := coupon.DecodeReminders(back)
		if !reflect.DeepEqual(again, rs) {
			t.Fatalf("decode(encode(x)) = %v, want %v", again, rs)
		}
	}
	all, _ := coupon.DecodeReminders(coupon.ReminderBitsMask)
	if len(all) != 60 {
		t.Fatalf("full bitmap decodes to %d reminders, want 60", len(all))
	}
}

// FuzzReminderBitmap checks decode(encode(x)) == x for any valid set of
// reminders (normalised: ordered, without duplicates), and that encode and
// decode agree on every bitmap.
func FuzzReminderBitmap(f *testing.F) {
	f.Add(int64(0), []byte{})
	f.Add(int64(1), []byte{0, 0, 11, 4})
	f.Add(int64(-1), []byte{3, 2, 2, 3, 200, 9})
	f.Fuzz(func(t *testing.T, raw int64, pairs []byte) {
		var x []coupon.Reminder
		valid := true
		for i := 0; i+1 < len(pairs); i += 2 {
			minutes, ch := int(pairs[i])%13*5, int(pairs[i+1])%6 // includes 0 minutes and an unknown channel
			name := "fax"
			if ch < len(model.Channels) {
				name = model.Channels[ch]
			}
			if minutes == 0 || name == "fax" {
				valid = false
			}
			x = append(x, coupon.Reminder{MinutesBefore: minutes, Channel: name})
		}
		enc, err := coupon.EncodeReminders(x)
		if !valid {
			if err == nil {
				t.Fatalf("encode accepted invalid %v", x)
			}
			return
		}
		if err != nil {
			t.Fatalf("encode %v: %v", x, err)
		}
		got, err := coupon.DecodeReminders(enc)
		if err != nil {
			t.Fatal(err)
		}
		if want := normalise(x); !reflect.DeepEqual(got, want) {
			t.Fatalf("decode(encode(%v)) = %v, want %v", x, got, want)
		}
		// Any bitmap: decoding refuses exactly the ones with stray bits.
		rs, err := coupon.DecodeReminders(raw)
		if (err != nil) != (raw&^coupon.ReminderBitsMask != 0) {
			t.Fatalf("decode(%#x) error = %v", uint64(raw), err)
		}
		if err == nil {
			if back, _ := coupon.EncodeReminders(rs); back != raw {
				t.Fatalf("encode(decode(%#x)) = %#x", uint64(raw), back)
			}
		}
	})
}

// normalise orders reminders by lead time then channel number and drops duplicates.
func normalise(x []coupon.Reminder) []coupon.Reminder {
	out := []coupon.Reminder{}
	for m := 5; m <= 60; m += 5 {
		for _, ch := range model.Channels {
			for _, r := range x {
				if r.MinutesBefore == m && r.Channel == ch {
					out = append(out, r)
					break
				}
			}
		}
	}
	return out
}
