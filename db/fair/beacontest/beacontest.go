// Package beacontest is a drand-style randomness beacon on a local HTTP
// server, for tests of raffles that mix one in: the test says which
// rounds are published, so no test waits on the wall clock.
package beacontest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Beacon serves GET /info and GET /public/{round} like drand's HTTP API.
type Beacon struct {
	*httptest.Server
	Period  int64 // seconds
	Genesis int64 // Unix seconds of round 1

	published atomic.Int64 // rounds up to this one are out
	mu        sync.Mutex
	fetched   map[int64]int // requests per round
}

// New starts a beacon whose round 1 is at genesis, a round every period.
func New(t testing.TB, genesis time.Time, period time.Duration) *Beacon {
	b := &Beacon{Period: int64(period / time.Second), Genesis: genesis.Unix(), fetched: map[int64]int{}}
	b.Server = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.Close)
	return b
}

// Publish makes rounds up to r available.
func (b *Beacon) Publish(r int64) { b.published.Store(r) }

// Fetched is how many times round r was asked for.
func (b *Beacon) Fetched(r int64) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fetched[r]
}

// Signature is round r's made-up signature, and Randomness its SHA-256, as drand's.
func Signature(r int64) []byte {
	d := sha256.Sum256([]byte("beacontest signature " + strconv.FormatInt(r, 10)))
	return d[:]
}

// Randomness is round r's randomness (hex).
func Randomness(r int64) string {
	d := sha256.Sum256(Signature(r))
	return hex.EncodeToString(d[:])
}

func (b *Beacon) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/info":
		json.NewEncoder(w).Encode(map[string]any{"period": b.Period, "genesis_time": b.Genesis, "public_key": "00", "hash": "test"})
	case strings.HasPrefix(r.URL.Path, "/public/"):
		n, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/public/"), 10, 64)
		if err != nil || n < 1 {
			http.Error(w, `{"error":"bad round"}`, http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.fetched[n]++
		b.mu.Unlock()
		if n > b.published.Load() {
			http.Error(w, `{"error":"round not yet available"}`, http.StatusNotFound)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"round": n, "randomness": Randomness(n), "signature": hex.EncodeToString(Signature(n))})
	default:
		http.NotFound(w, r)
	}
}
