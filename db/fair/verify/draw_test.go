package verify_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/seckill/seckill/db/fair/verify"
)

// The draw's rule, pinned to values computed with docs/FAIR_SALES.md's shell
// command (sha256sum, LC_ALL=C sort): changing the rule breaks every
// published draw's check, so it must fail here first.
func TestDrawOrderRule(t *testing.T) {
	seed := strings.Repeat("ab", 32)
	if got, want := verify.SeedHash(seed), "271a413bd339c5709fdceaec41f14f11e9fbfb5042d72d331c65f32b284cd09a"; got != want {
		t.Fatalf("SeedHash = %s, want %s", got, want)
	}
	root, beacon := strings.Repeat("cd", 32), strings.Repeat("ef", 32)
	if got, want := verify.Randomness(seed, root, ""), "2e4d1396519cfbbef84d2c3eed685fec99f23eb52924c697cfb5ec95b1ba7b60"; got != want {
		t.Fatalf("Randomness without a beacon = %s, want %s", got, want)
	}
	if got, want := verify.Randomness(seed, root, beacon), "e1cfde3738cde2f6c774658b531875fbe41dd90838daf5c42cd246160a9120ee"; got != want {
		t.Fatalf("Randomness with a beacon = %s, want %s", got, want)
	}
	// The keys and the order are of the randomness; seed stands in for one here.
	if got, want := verify.DrawKey(seed, 42), "255754a79b3228577309ace91ccb2aa65e78751b46ab3dfbb434f5e5b50041e7"; got != want {
		t.Fatalf("DrawKey(42) = %s, want %s", got, want)
	}
	for _, c := range []struct {
		name  string
		users []int64
		want  []int64
	}{
		{"none", nil, []int64{}},
		{"one", []int64{7}, []int64{7}},
		{"seven", []int64{1, 2, 3, 4, 5, 42, 1000}, []int64{42, 4, 1000, 2, 3, 5, 1}},
		{"any input order", []int64{1000, 5, 1, 42, 3, 2, 4}, []int64{42, 4, 1000, 2, 3, 5, 1}},
	} {
		if got := verify.DrawOrder(seed, c.users); !slices.Equal(got, c.want) {
			t.Errorf("%s: DrawOrder = %v, want %v", c.name, got, c.want)
		}
	}
	if s := verify.NewSeed(); len(s) != 64 || strings.Trim(s, "0123456789abcdef") != "" || s == verify.NewSeed() {
		t.Fatalf("NewSeed %q: want 64 fresh lowercase hex digits", s)
	}
}
