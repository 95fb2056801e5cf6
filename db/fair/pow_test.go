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
	c := newChallenge(key, 7, 8, now.Add(PowTTL))
	good := SolvePow(c)
	parts := strings.SplitN(good, ":", 3)
	wrong := parts[1] + "z" // a nonce that does not solve it (one in 256 would by chance)
	for i := 0; leadingZeroBits(sha256.Sum256([]byte(parts[0]+wrong))) >= 8; i++ {
		wrong = parts[1] + "z" + strconv.Itoa(i)
	}
	for _, tc := range []struct {
		name   string
		header string
		goods  int64
		at     time.Time
		ok     bool
	}{
		{"solved", good, 7, now, true},
		{"other goods", good, 8, now, false},
		{"expired", good, 7, now.Add(PowTTL), false},
		{"other key", SolvePow(newChallenge([]byte("x"), 7, 8, now.Add(PowTTL))), 7, now, false},
		{"unsolved", parts[0] + ":" + wrong + ":" + parts[2], 7, now, false},
		{"no nonce", parts[0] + "::" + parts[2], 7, now, false},
		{"bits changed", strings.Replace(parts[0], ".8.", ".1.", 1) + ":" + parts[1] + ":" + parts[2], 7, now, false},
		{"garbage", "a:b", 7, now, false},
	} {
		if _, ok := checkPow(key, tc.header, tc.goods, tc.at); ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
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
// HMAC and one SHA-256 (about a microsecond).
func BenchmarkCheckPow(b *testing.B) {
	key, now := []byte("0123456789abcdef0123456789abcdef"), time.Now()
	header := SolvePow(newChallenge(key, 42, DefaultPowBits, now.Add(PowTTL)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := checkPow(key, header, 42, now); !ok {
			b.Fatal("refused")
		}
	}
}
