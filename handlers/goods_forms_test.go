package handlers

import (
	"testing"
	"time"
)

func TestParseYuan(t *testing.T) {
	for _, tc := range []struct {
		in    string
		cents int64
		bad   bool
	}{
		{"49.99", 4999, false},
		{"49.9", 4990, false},
		{"49", 4900, false},
		{" 0.05 ", 5, false},
		{"0", 0, false},
		{"-1.50", -150, false},
		{"1.999", 0, true},
		{"1e3", 0, true},
		{"abc", 0, true},
		{"", 0, true},
		{"92233720368547758.07", 0, true},
		{"92233720368547758", 0, true},
		{"92233720368547757", 9223372036854775700, false}, // fits; the store refuses it as too large
	} {
		got, err := parseYuan(tc.in)
		if (err != nil) != tc.bad || got != tc.cents {
			t.Errorf("parseYuan(%q) = %d, %v; want %d, bad=%v", tc.in, got, err, tc.cents, tc.bad)
		}
	}
}

func TestParseLocalTime(t *testing.T) {
	want := time.Date(2030, 5, 1, 2, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in  string
		off int
	}{
		{"2030-05-01T02:00", 0},
		{"2030-05-01T10:00", -480}, // UTC+8: getTimezoneOffset is -480
		{"2030-04-30T22:00:00", 240},
		{"2030-05-01T04:00:00+02:00", 999}, // an explicit zone wins
	} {
		got, err := parseLocalTime(tc.in, tc.off)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseLocalTime(%q, %d) = %s, %v; want %s", tc.in, tc.off, got, err, want)
		}
	}
	if _, err := parseLocalTime("tomorrow", 0); err == nil {
		t.Error("parsed nonsense")
	}
}
