package fair

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
)

// The raffle's draw order is a pure function of the seed and the entries,
// so anyone can recompute it from GET /api/goods/{id}/draw's answer:
//
//	key(user) = hex SHA-256 of the text seed + ":" + user ID (decimal)
//	order     = the entries' user IDs sorted by key (byte order, as LC_ALL=C sort)
//
// The first min(stock, entries) of the order win; a unit passed on (an order
// expired or cancelled) goes to the next in the order. The seed is 32 random
// bytes written as 64 lowercase hex digits, and seed_hash, published before
// the first entry, is the hex SHA-256 of that text. README "Raffle" has the
// shell command; TestRaffleDrawRecomputedByShell runs it.

// NewSeed returns a fresh secret seed: 32 random bytes in lowercase hex.
func NewSeed() string { return randomHex(32) }

// SeedHash is the hex SHA-256 of the seed's text, published before the draw.
func SeedHash(seed string) string {
	d := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(d[:])
}

// DrawKey is an entry's key in the draw: hex SHA-256 of seed + ":" + the user ID.
func DrawKey(seed string, userID int64) string {
	d := sha256.Sum256([]byte(seed + ":" + strconv.FormatInt(userID, 10)))
	return hex.EncodeToString(d[:])
}

// DrawOrder returns the entries' user IDs in the draw's order: by DrawKey,
// then (a tie is a SHA-256 collision) by user ID.
func DrawOrder(seed string, users []int64) []int64 {
	type keyed struct {
		key  string
		user int64
	}
	ks := make([]keyed, len(users))
	for i, u := range users {
		ks[i] = keyed{DrawKey(seed, u), u}
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
