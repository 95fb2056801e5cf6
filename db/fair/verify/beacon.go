package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Beacon is a public randomness beacon with drand's HTTP API, mixed into
// raffle draws (RAFFLE_BEACON_URL): the round first published after a
// raffle's entries close is named when the raffle opens, and its
// randomness, unknown to anyone until then, goes into the draw's
// randomness. So even the server, which knows the seed, cannot pick
// entries before the close that would win.
//
//	GET {url}/info          → {period, genesis_time, …}   (seconds)
//	GET {url}/public/{round} → {round, randomness, signature} (hex)
//
// Round r is published at genesis_time + (r-1)·period.
type Beacon struct {
	URL string
	// Client makes the requests (nil: a client with a 10 s timeout).
	Client *http.Client
	// Backoff is the first wait between tries of a round (nil: 250 ms), doubling.
	Backoff time.Duration

	mu   sync.Mutex
	info *BeaconInfo // read once: a chain's period and genesis never change
}

// BeaconInfo is a beacon chain's timing.
type BeaconInfo struct {
	Period      int64 `json:"period"`       // seconds between rounds
	GenesisTime int64 `json:"genesis_time"` // Unix seconds of round 1
}

// BeaconRound is one published round.
type BeaconRound struct {
	Round      int64  `json:"round"`
	Randomness string `json:"randomness"`
	Signature  string `json:"signature"`
}

// ErrBeaconNotYet is a round not published (or not reachable) yet.
var ErrBeaconNotYet = errors.New("the beacon round is not available yet")

// RoundAfter is the first round published strictly after t.
func (i BeaconInfo) RoundAfter(t time.Time) int64 {
	since := t.Unix() - i.GenesisTime
	if since < 0 {
		return 1
	}
	return since/i.Period + 2
}

// RoundTime is when round r is published.
func (i BeaconInfo) RoundTime(r int64) time.Time {
	return time.Unix(i.GenesisTime+(r-1)*i.Period, 0)
}

func (b *Beacon) client() *http.Client {
	if b.Client != nil {
		return b.Client
	}
	return &http.Client{Timeout: 10 * time.Second}
}

func (b *Beacon) get(ctx context.Context, path string, into any) (status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(b.URL, "/")+path, nil)
	if err != nil {
		return 0, err
	}
	res, err := b.client().Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return res.StatusCode, err
	}
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, fmt.Errorf("beacon %s: %s", path, res.Status)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return res.StatusCode, fmt.Errorf("beacon %s: %w", path, err)
	}
	return res.StatusCode, nil
}

// Info returns the chain's period and genesis, read once.
func (b *Beacon) Info(ctx context.Context) (BeaconInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.info != nil {
		return *b.info, nil
	}
	var i BeaconInfo
	if _, err := b.get(ctx, "/info", &i); err != nil {
		return i, err
	}
	if i.Period <= 0 || i.GenesisTime <= 0 {
		return i, fmt.Errorf("beacon %s/info: period %d, genesis_time %d", b.URL, i.Period, i.GenesisTime)
	}
	b.info = &i
	return i, nil
}

// Round fetches round r once: ErrBeaconNotYet when the beacon does not
// have it (yet). The randomness must be 32 bytes of hex and, when a
// signature is given, its SHA-256 (as drand makes it).
func (b *Beacon) Round(ctx context.Context, r int64) (*BeaconRound, error) {
	var br BeaconRound
	status, err := b.get(ctx, "/public/"+strconv.FormatInt(r, 10), &br)
	switch {
	case status == http.StatusNotFound || status == http.StatusTooEarly:
		return nil, fmt.Errorf("round %d: %w", r, ErrBeaconNotYet)
	case err != nil:
		return nil, err
	case br.Round != r:
		return nil, fmt.Errorf("beacon: asked round %d, got %d", r, br.Round)
	}
	br.Randomness = strings.ToLower(br.Randomness)
	if _, err := hexDigest(br.Randomness); err != nil {
		return nil, fmt.Errorf("beacon round %d: randomness %q is not 32 bytes of hex", r, br.Randomness)
	}
	if br.Signature != "" {
		sig, err := hex.DecodeString(br.Signature)
		d := sha256.Sum256(sig)
		if err != nil || hex.EncodeToString(d[:]) != br.Randomness {
			return nil, fmt.Errorf("beacon round %d: randomness is not the SHA-256 of the signature", r)
		}
	}
	return &br, nil
}

// RoundRetry fetches round r, trying up to three times with a doubling
// wait when it is not there or the beacon does not answer.
func (b *Beacon) RoundRetry(ctx context.Context, r int64) (*BeaconRound, error) {
	wait := b.Backoff
	if wait <= 0 {
		wait = 250 * time.Millisecond
	}
	var err error
	for try := range 3 {
		if try > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
			wait *= 2
		}
		var br *BeaconRound
		if br, err = b.Round(ctx, r); err == nil {
			return br, nil
		}
	}
	return nil, err
}
