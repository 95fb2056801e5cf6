// Package ratelimit holds the abuse limits of the web layer: rates written
// "N/s" or "N/m", token buckets kept in process, and the share of a limit
// that one web process may hand out when several serve the same shop.
package ratelimit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is N events per Per; the zero Rate is off (no limit).
type Rate struct {
	N   int
	Per time.Duration
}

// Off reports whether the rate imposes no limit.
func (r Rate) Off() bool { return r.N <= 0 || r.Per <= 0 }

// String writes the rate the way ParseRate reads it.
func (r Rate) String() string {
	if r.Off() {
		return "0"
	}
	unit := "s"
	if r.Per == time.Minute {
		unit = "m"
	}
	return fmt.Sprintf("%d/%s", r.N, unit)
}

// ParseRate reads "N/s", "N/m" or "0" (off).
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return Rate{}, nil
	}
	n, unit, ok := strings.Cut(s, "/")
	v, err := strconv.Atoi(n)
	if !ok || err != nil || v < 0 || v > 1_000_000 {
		return Rate{}, fmt.Errorf("%q is not a rate like 10/s, 10/m or 0 (off)", s)
	}
	switch unit {
	case "s":
		return Rate{N: v, Per: time.Second}, nil
	case "m":
		return Rate{N: v, Per: time.Minute}, nil
	}
	return Rate{}, fmt.Errorf("%q is not a rate like 10/s, 10/m or 0 (off)", s)
}
