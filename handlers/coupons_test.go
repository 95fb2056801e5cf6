package handlers

import (
	"testing"
	"time"
)

func TestParseLocalTimeWithFormOffset(t *testing.T) {
	// A browser at UTC+8 reports an offset of -480 minutes.
	got, err := parseLocalTime("2030-05-01T10:00", tzOffsetMinutes("-480"))
	if want := time.Date(2030, 5, 1, 2, 0, 0, 0, time.UTC); err != nil || !got.Equal(want) {
		t.Fatalf("UTC+8 = %s, %v; want %s", got, err, want)
	}
	got, err = parseLocalTime("2030-05-01T10:00", tzOffsetMinutes(""))
	if want := time.Date(2030, 5, 1, 10, 0, 0, 0, time.UTC); err != nil || !got.Equal(want) {
		t.Fatalf("no offset = %s, %v; want %s", got, err, want)
	}
	if got, err := parseLocalTime("2030-05-01T10:00:00+02:00", tzOffsetMinutes("")); err != nil || got.UTC().Hour() != 8 {
		t.Fatalf("RFC 3339 = %s, %v", got, err)
	}
	if _, err := parseLocalTime("tomorrow", tzOffsetMinutes("0")); err == nil {
		t.Fatal("accepted a non-time")
	}
}
