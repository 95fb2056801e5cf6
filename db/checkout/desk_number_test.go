package checkout

import "testing"

func TestParseOrderNumber(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"G12-0007", 12_000_000_007, true},
		{"#G12-0007", 12_000_000_007, true},
		{" g7-1 ", 7_000_000_001, true},
		{"G7-123456789", 7_123_456_789, true},
		{"G7-1234567890", 0, false}, // past the goods' sequence span
		{"G0-0001", 0, false},
		{"G7-0000", 0, false},
		{"7000000001", 0, false}, // an ID is not a number
		{"G7", 0, false},
		{"alice", 0, false},
		{"G99999999999999999-0001", 0, false}, // the ID would overflow
	} {
		got, ok := ParseOrderNumber(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseOrderNumber(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
