package handlers

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var yuanRE = regexp.MustCompile(`^(-?)(\d+)(?:\.(\d{1,2}))?$`)

// parseYuan reads a price typed in yuan ("49", "49.9", "49.99") as exact cents, without floats.
func parseYuan(s string) (int64, error) {
	m := yuanRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("must be an amount like 49.99")
	}
	whole, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil || whole > (math.MaxInt64-99)/100 {
		return 0, fmt.Errorf("is too large")
	}
	frac := int64(0)
	if m[3] != "" {
		frac, _ = strconv.ParseInt((m[3] + "0")[:2], 10, 64)
	}
	cents := whole*100 + frac
	if m[1] == "-" {
		cents = -cents
	}
	return cents, nil
}

// parseLocalTime reads a datetime-local value typed in a browser whose clock
// is offsetMin minutes behind UTC (JavaScript's getTimezoneOffset).
func parseLocalTime(s string, offsetMin int) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339} {
		if t, err := time.Parse(layout, strings.TrimSpace(s)); err == nil {
			if layout == time.RFC3339 {
				return t.UTC(), nil
			}
			return t.Add(time.Duration(offsetMin) * time.Minute).UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("must be a date and time")
}

// tzOffsetMinutes reads a form's tz_offset (JavaScript's getTimezoneOffset,
// in minutes); anything missing or out of range means UTC.
func tzOffsetMinutes(s string) int {
	off, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || off < -24*60 || off > 24*60 {
		return 0
	}
	return off
}
