package handlers

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
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
