package sale

import "testing"

func TestOrderID(t *testing.T) {
	for _, tc := range []struct {
		id         int64
		goods, seq int64
		ok         bool
	}{
		{OrderID(1, 1), 1, 1, true},
		{OrderID(42, 999_999_999), 42, 999_999_999, true},
		{OrderID(MaxID, 7), MaxID, 7, true},
		{OrderID(MaxID+1, 1), 0, 0, false},
		{OrderID(5, 0), 0, 0, false},
		{999, 0, 0, false},
		{0, 0, 0, false},
		{-OrderID(3, 1), 0, 0, false},
	} {
		g, s, ok := SplitOrderID(tc.id)
		if g != tc.goods || s != tc.seq || ok != tc.ok {
			t.Errorf("SplitOrderID(%d) = %d, %d, %v; want %d, %d, %v", tc.id, g, s, ok, tc.goods, tc.seq, tc.ok)
		}
	}
	if max := OrderID(MaxID, OrderSeqSpan-1); max >= 1<<53 {
		t.Fatalf("largest order ID %d is not below 2^53", max)
	}
}
