package views

import "testing"

// A goods' shard count reads back as the nearest demand, and the edit form
// shows the number in the advanced field only when the demand does not say it.
func TestDemandOfShards(t *testing.T) {
	for _, tc := range []struct {
		shards         int
		demand, custom string
	}{
		{0, "normal", ""},
		{1, "normal", ""},
		{2, "normal", "2"},
		{3, "hot", "3"},
		{4, "hot", ""},
		{6, "very_hot", "6"},
		{8, "very_hot", ""},
	} {
		if got := DemandOf(tc.shards); got != tc.demand {
			t.Errorf("DemandOf(%d) = %q, want %q", tc.shards, got, tc.demand)
		}
		if got := customShards(tc.shards); got != tc.custom {
			t.Errorf("customShards(%d) = %q, want %q", tc.shards, got, tc.custom)
		}
		if n, _ := ShardsForDemand(DemandOf(tc.shards)); tc.custom == "" && n != max(tc.shards, 1) {
			t.Errorf("%d shards: demand %q stands for %d", tc.shards, DemandOf(tc.shards), n)
		}
	}
}
