package fair

import (
	"crypto/sha256"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCheckPow(t *testing.T) {
	key, now := []byte("k"), time.UnixMilli(1_700_000_000_000)
	c := newChallenge(key, 7, 3, 10, now.Add(PowTTL)) // level 10: four solutions of 8 bits
	if c.Bits != 8 || c.Solutions != 4 || !c.ExpiresAt.Equal(now.Add(PowTTL)) {
		t.Fatalf("challenge %+v, want 4 solutions of 8 bits expiring in a minute", c)
	}
	good := SolvePow(c)
	parts := strings.SplitN(good, ":", 3)
	nonces := strings.Split(parts[1], ",")
	wrong := "z" // a nonce that does not solve it (one in 256 would by chance)
	for i := 0; leadingZeroBits(sha256.Sum256([]byte(parts[0]+wrong))) >= 8; i++ {
		wrong = "z" + strconv.Itoa(i)
	}
	with := func(ns ...string) string { return parts[0] + ":" + strings.Join(ns, ",") + ":" + parts[2] }
	for _, tc := range []struct {
		name   string
		header string
		goods  int64
		user   int64
		at     time.Time
		ok     bool
	}{
		{"solved", good, 7, 3, now, true},
		{"other goods", good, 8, 3, now, false},
		{"other shopper", good, 7, 4, now, false},
		{"expired", good, 7, 3, now.Add(PowTTL), false},
		{"other key", SolvePow(newChallenge([]byte("x"), 7, 3, 10, now.Add(PowTTL))), 7, 3, now, false},
		{"one unsolved", with(nonces[0], nonces[1], nonces[2], wrong), 7, 3, now, false},
		{"one twice", with(nonces[0], nonces[1], nonces[2], nonces[0]), 7, 3, now, false},
		{"too few", with(nonces[:3]...), 7, 3, now, false},
		{"too many", with(append(nonces, solvePow(parts[0], 8, 5)[4])...), 7, 3, now, false},
		{"no nonce", parts[0] + "::" + parts[2], 7, 3, now, false},
		{"bits changed", strings.Replace(parts[0], ".8.4.", ".1.4.", 1) + ":" + parts[1] + ":" + parts[2], 7, 3, now, false},
		{"solutions changed", strings.Replace(parts[0], ".8.4.", ".8.1.", 1) + ":" + nonces[0] + ":" + parts[2], 7, 3, now, false},
		{"shopper changed", "7.4" + strings.TrimPrefix(parts[0], "7.3") + ":" + parts[1] + ":" + parts[2], 7, 4, now, false},
		{"garbage", "a:b", 7, 3, now, false},
	} {
		if _, ok := checkPow(key, tc.header, tc.goods, tc.user, tc.at); ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
		}
	}
}

// A level splits into solutions of equal work: 2^level digests expected in all.
func TestPowShape(t *testing.T) {
	for _, tc := range []struct{ level, bits, n int }{{0, 0, 0}, {1, 1, 1}, {5, 5, 1}, {6, 4, 4}, {14, 12, 4}, {24, 22, 4}} {
		if b, n := powShape(tc.level); b != tc.bits || n != tc.n {
			t.Errorf("level %d: %d solutions of %d bits, want %d of %d", tc.level, n, b, tc.n, tc.bits)
		}
	}
}

func TestLeadingZeroBits(t *testing.T) {
	for _, tc := range []struct {
		d    [32]byte
		want int
	}{{[32]byte{0x80}, 0}, {[32]byte{0x01}, 7}, {[32]byte{0, 0x10}, 11}, {[32]byte{}, 256}} {
		if got := leadingZeroBits(tc.d); got != tc.want {
			t.Errorf("%x: %d, want %d", tc.d[:2], got, tc.want)
		}
	}
}

// BenchmarkCheckPow is the server's cost of checking one solution: one
// HMAC and a SHA-256 per nonce (a few microseconds).
func BenchmarkCheckPow(b *testing.B) {
	key, now := []byte("0123456789abcdef0123456789abcdef"), time.Now()
	header := SolvePow(newChallenge(key, 42, 9, DefaultPowBits, now.Add(PowTTL)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := checkPow(key, header, 42, 9, now); !ok {
			b.Fatal("refused")
		}
	}
}
