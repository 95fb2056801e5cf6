package sale

import "testing"

// Every script reply is one string; parseAnswer is the Go side of that protocol.
func TestParseAnswer(t *testing.T) {
	const rec = "3|7|5|4999|unpaid|1000|2000|1|1000"
	for _, tc := range []struct {
		reply string
		want  answer
		bad   bool
	}{
		{"sold_out", answer{Code: "sold_out"}, false},
		{"not_found", answer{Code: "not_found"}, false},
		{"ok:41:7:1764550000123456:" + rec, answer{Code: "ok", Remaining: 41, Slot: 7, Version: 1764550000123456, Rec: rec}, false},
		{"ok:41:7:" + rec, answer{Code: "ok", Remaining: 41, Slot: 7, Rec: rec}, false}, // remembered by a release without versions
		{"ok:41:7:v1:" + rec, answer{}, true},
		{"lapsed:0:0:" + rec, answer{Code: "lapsed", Remaining: 0, Slot: 0, Rec: rec}, false},
		{"ok:41:" + rec, answer{}, true},
		{"ok:x:7:" + rec, answer{}, true},
		{"ok:41:y:" + rec, answer{}, true},
	} {
		got, err := ParseAnswer(1, tc.reply)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("parseAnswer(%q) = %+v, %v; want %+v, error %v", tc.reply, got, err, tc.want, tc.bad)
		}
	}
}
