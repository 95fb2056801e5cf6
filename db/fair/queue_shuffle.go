package fair

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
)

// The waiting room's shuffle at the start: the shoppers who joined before
// it, numbered 0..n-1 in the order they joined, get places 0..n-1 by a
// permutation keyed with the queue's seed. The permutation is a Feistel
// network over the smallest even number of bits that holds n, with
// HMAC-SHA256(seed, round ‖ half) as its round function, walked in cycles
// until the result falls below n (at most a few steps on average): a
// bijection by construction, so nothing is moved in Redis at the start and
// anyone holding the seed and n recomputes every place (QueuePlaces).

const shuffleRounds = 6

// shufflePlace is the place of the shopper who joined j-th (0-based) of the
// n who joined before the start, under seed (hex).
func shufflePlace(seed string, n, j int64) int64 {
	if n <= 1 || j < 0 || j >= n {
		return j
	}
	key, err := hex.DecodeString(seed)
	if err != nil || len(key) == 0 {
		key = []byte(seed)
	}
	k := bits.Len64(uint64(n - 1))
	if k%2 == 1 {
		k++
	}
	half := uint(k / 2)
	mask := uint64(1)<<half - 1
	mac := hmac.New(sha256.New, key)
	var buf [9]byte
	var sum [sha256.Size]byte
	x := uint64(j)
	for {
		l, r := x>>half, x&mask
		for round := range shuffleRounds {
			buf[0] = byte(round)
			binary.BigEndian.PutUint64(buf[1:], r)
			mac.Reset()
			mac.Write(buf[:])
			f := binary.BigEndian.Uint64(mac.Sum(sum[:0])) & mask
			l, r = r, l^f
		}
		x = l<<half | r
		if x < uint64(n) {
			return int64(x)
		}
	}
}

// QueuePlace is the place in line (0-based) of the shopper who joined j-th
// (0-based) of the n who joined before the start, under the room's seed
// (hex, as GET /api/goods/{id}/queue/room publishes it): what `seckill
// queue-place` answers, one-based, and the ticket's place.
func QueuePlace(seed string, n, j int64) int64 { return shufflePlace(seed, n, j) }

// QueuePlaces is the shuffle's outcome for the audit: the place of each of
// the n shoppers who joined before the start, by the order they joined.
func QueuePlaces(seed string, n int64) []int64 {
	out := make([]int64, n)
	for j := range n {
		out[j] = shufflePlace(seed, n, j)
	}
	return out
}
