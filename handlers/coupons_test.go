package handlers

import (
	"testing"
	"time"
)

func TestParseCents(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"10", 1000, true}, {"9.9", 990, true}, {"9.90", 990, true}, {"0.01", 1, true}, {" ¥12.34 ", 1234, true}, {"0", 0, true},
		{"", 0, false}, {"abc", 0, false}, {"1.234", 0, false}, {"1.", 0, false}, {".5", 0, false}, {"-1", 0, false}, {"1e3", 0, false},
		{"1,000", 0, false}, {"9999999999999", 0, false},
	} {
		got, err := parseCents(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseCents(%q) = %d, %v; want %d (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseFormTime(t *testing.T) {
	// A browser at UTC+8 reports an offset of -480 minutes.
	got, err := parseFormTime("2030-05-01T10:00", "-480")
	if want := time.Date(2030, 5, 1, 2, 0, 0, 0, time.UTC); err != nil || !got.Equal(want) {
		t.Fatalf("UTC+8 = %s, %v; want %s", got, err, want)
	}
	got, err = parseFormTime("2030-05-01T10:00", "")
	if want := time.Date(2030, 5, 1, 10, 0, 0, 0, time.UTC); err != nil || !got.Equal(want) {
		t.Fatalf("no offset = %s, %v; want %s", got, err, want)
	}
	if got, err := parseFormTime("2030-05-01T10:00:00+02:00", ""); err != nil || got.UTC().Hour() != 8 {
		t.Fatalf("RFC 3339 = %s, %v", got, err)
	}
	if _, err := parseFormTime("tomorrow", "0"); err == nil {
		t.Fatal("accepted a non-time")
	}
}
