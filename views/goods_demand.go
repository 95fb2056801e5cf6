package views

// DemandChoice is one answer to "Expected demand" on the goods form: the
// merchant's word for how hot an item is, and the number of stock shards
// (Redis buckets the stock is split across, the API's `shards`) it stands for.
type DemandChoice struct {
	Value  string
	Label  string
	Shards int
}

// Demands are the goods form's choices of expected demand, coolest first.
var Demands = []DemandChoice{
	{Value: "normal", Label: "Normal", Shards: 1},
	{Value: "hot", Label: "Hot", Shards: 4},
	{Value: "very_hot", Label: "Very hot", Shards: 8},
}

// ShardsForDemand is the number of shards a demand choice stands for; ok is
// false for a value that is no choice.
func ShardsForDemand(demand string) (shards int, ok bool) {
	for _, d := range Demands {
		if d.Value == demand {
			return d.Shards, true
		}
	}
	return 0, false
}

// DemandOf is the choice that describes a goods split into shards: the
// nearest one, ties going to the hotter (0, unknown, reads as normal).
func DemandOf(shards int) string {
	best := Demands[0]
	for _, d := range Demands[1:] {
		if abs(shards-d.Shards) <= abs(shards-best.Shards) {
			best = d
		}
	}
	return best.Value
}

// customShards is the advanced field's value for a goods: blank when the
// demand choice alone says it, the number otherwise.
func customShards(shards int) string {
	if n, _ := ShardsForDemand(DemandOf(shards)); n == max(shards, 1) {
		return ""
	}
	return i64(int64(shards))
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
