package verify

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
)

// The raffle's draw order is a pure function of the seed, the entries and
// the beacon, so anyone can recompute it from GET /api/goods/{id}/draw's
// answer (seckill verify-draw does):
//
//	randomness = hex SHA-256 of seed + ":" + entries_root [+ ":" + beacon]
//	key(user)  = hex SHA-256 of randomness + ":" + user ID (decimal)
//	order      = the entries' user IDs sorted by key (byte order, as LC_ALL=C sort)
//
// The first min(stock, entries) of the order win; a unit passed on (an order
// expired or cancelled) goes to the next in the order. The seed is 32 random
// bytes written as 64 lowercase hex digits, and seed_hash, published before
// the first entry, is the hex SHA-256 of that text; entries_root
// (merkle.go) is published when entries close; beacon is the randomness
// (hex) of the public beacon's round named when the raffle opened, left
// out (with its ":") when the server has no beacon. docs/FAIR_SALES.md
// "Checking a draw" has the shell command; TestRaffleDraw runs it.

// NewSeed returns a fresh secret seed: 32 random bytes in lowercase hex.
func NewSeed() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// SeedHash is the hex SHA-256 of the seed's text, published before the draw.
func SeedHash(seed string) string {
	d := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(d[:])
}

// Randomness is the draw's randomness: hex SHA-256 of seed + ":" +
// entries root, + ":" + beacon when there is one ("": none).
func Randomness(seed, entriesRoot, beacon string) string {
	text := seed + ":" + entriesRoot
	if beacon != "" {
		text += ":" + beacon
	}
	d := sha256.Sum256([]byte(text))
	return hex.EncodeToString(d[:])
}

// DrawKey is an entry's key in the draw: hex SHA-256 of randomness + ":" + the user ID.
func DrawKey(randomness string, userID int64) string {
	d := sha256.Sum256([]byte(randomness + ":" + strconv.FormatInt(userID, 10)))
	return hex.EncodeToString(d[:])
}

// DrawOrder returns the entries' user IDs in the draw's order: by DrawKey
// of the randomness, then (a tie is a SHA-256 collision) by user ID.
func DrawOrder(randomness string, users []int64) []int64 {
	type keyed struct {
		key  string
		user int64
	}
	ks := make([]keyed, len(users))
	for i, u := range users {
		ks[i] = keyed{DrawKey(randomness, u), u}
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].key != ks[j].key {
			return ks[i].key < ks[j].key
		}
		return ks[i].user < ks[j].user
	})
	out := make([]int64, len(ks))
	for i, k := range ks {
		out[i] = k.user
	}
	return out
}
