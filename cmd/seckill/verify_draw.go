package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill/seckill/db/fair/verify"
)

// verify-draw: anyone's check of a raffle's draw from its public answer
// alone (GET /api/goods/{id}/draw), by the rules of db/fair (raffle_order.go,
// merkle.go), which are the documented ones (docs/FAIR_SALES.md "Checking a
// draw"):
//
//   - the seed hashes to seed_hash, published when the raffle opened;
//   - the entrants (every user ID of the draw's order, each once, as many as
//     entries) make entries_root, published when entries closed;
//   - the beacon round named (beacon_round) is published after the close
//     (draw_at), and the beacon says its randomness is beacon;
//   - randomness = SHA-256(seed:entries_root[:beacon]);
//   - the order is the entrants sorted by SHA-256(randomness:user_id).
//
// It prints each check and "draw verified", or returns what differs (the
// command then exits 1).

// drawAnswer is the public draw's fields the check reads.
type drawAnswer struct {
	GoodsID     int64     `json:"goods_id"`
	Status      string    `json:"status"`
	SeedHash    string    `json:"seed_hash"`
	Seed        string    `json:"seed"`
	Entries     int64     `json:"entries"`
	EntriesRoot string    `json:"entries_root"`
	DrawAt      time.Time `json:"draw_at"`
	BeaconRound *int64    `json:"beacon_round"`
	Beacon      *string   `json:"beacon"`
	Randomness  string    `json:"randomness"`
	Winners     *int64    `json:"winners"`
	Order       []int64   `json:"order"`
}

// runVerifyDraw is `seckill verify-draw [-beacon URL] <base URL> <goods id>`.
func runVerifyDraw(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("verify-draw", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	beaconURL := fs.String("beacon", os.Getenv("RAFFLE_BEACON_URL"), "the beacon the draw names a round of ($RAFFLE_BEACON_URL)")
	usage := "usage: seckill verify-draw [-beacon URL] <base URL> <goods id>"
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%v\n%s", err, usage)
	}
	if fs.NArg() != 2 {
		return errors.New(usage)
	}
	base := strings.TrimRight(fs.Arg(0), "/")
	id, err := strconv.ParseInt(fs.Arg(1), 10, 64)
	if err != nil || id <= 0 {
		return fmt.Errorf("goods id %q is not a positive number\n%s", fs.Arg(1), usage)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	d, err := fetchDraw(ctx, client, base, id)
	if err != nil {
		return err
	}
	var beacon *verify.Beacon
	if *beaconURL != "" {
		beacon = &verify.Beacon{URL: *beaconURL, Client: client}
	}
	return verifyDraw(ctx, d, id, beacon, out)
}

func fetchDraw(ctx context.Context, client *http.Client, base string, id int64) (*drawAnswer, error) {
	url := fmt.Sprintf("%s/api/goods/%d/draw", base, id)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, res.Status, strings.TrimSpace(string(body)))
	}
	var d drawAnswer
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return &d, nil
}

// verifyDraw checks the answer d of goods id's draw, fetching its beacon
// round from beacon (nil: none given).
func verifyDraw(ctx context.Context, d *drawAnswer, id int64, beacon *verify.Beacon, out io.Writer) error {
	if d.Status != "drawn" || d.Seed == "" {
		return fmt.Errorf("raffle %d is not drawn yet (status %q): nothing to verify", id, d.Status)
	}
	var differs []string
	check := func(ok bool, what, detail string) {
		if ok {
			fmt.Fprintf(out, "ok   %s\n", what)
			return
		}
		fmt.Fprintf(out, "FAIL %s: %s\n", what, detail)
		differs = append(differs, what+": "+detail)
	}
	check(d.GoodsID == id, "the answer is of the goods asked", fmt.Sprintf("goods_id %d", d.GoodsID))
	check(verify.SeedHash(d.Seed) == d.SeedHash, "the seed hashes to seed_hash",
		fmt.Sprintf("SHA-256 of the seed is %s, seed_hash %s", verify.SeedHash(d.Seed), d.SeedHash))

	entrants := slices.Clone(d.Order)
	slices.Sort(entrants)
	dup := len(slices.Compact(slices.Clone(entrants))) != len(entrants)
	check(!dup && int64(len(entrants)) == d.Entries, "the entrants are the entries, each once",
		fmt.Sprintf("%d user IDs in the order (duplicates: %v), entries %d", len(d.Order), dup, d.Entries))
	if d.Winners != nil {
		check(*d.Winners >= 0 && *d.Winners <= int64(len(d.Order)), "the winners are among the entrants",
			fmt.Sprintf("%d winners of %d", *d.Winners, len(d.Order)))
	}

	legacy := d.EntriesRoot == "" && d.BeaconRound == nil && d.Randomness == d.Seed
	root := verify.EntriesTree(id, entrants).RootHex()
	if legacy {
		fmt.Fprintln(out, "note drawn before entries roots were published: the randomness is the seed")
	} else {
		check(root == d.EntriesRoot, "the entrants make entries_root",
			fmt.Sprintf("their Merkle root is %s, published %q", root, d.EntriesRoot))
	}

	beaconValue := ""
	switch {
	case legacy:
	case d.BeaconRound == nil:
		check(d.Beacon == nil, "no beacon named, none used", fmt.Sprintf("beacon %q without a round", deref(d.Beacon)))
	case beacon == nil:
		check(false, fmt.Sprintf("beacon round %d", *d.BeaconRound), "the draw names a beacon round: give its beacon with -beacon URL or RAFFLE_BEACON_URL")
	default:
		round := *d.BeaconRound
		info, err := beacon.Info(ctx)
		if err != nil {
			return fmt.Errorf("the beacon's info: %w", err)
		}
		at := info.RoundTime(round)
		check(at.After(d.DrawAt), fmt.Sprintf("beacon round %d comes after entries closed", round),
			fmt.Sprintf("it is published at %s, entries closed at %s", at.UTC().Format(time.RFC3339), d.DrawAt.UTC().Format(time.RFC3339)))
		br, err := beacon.Round(ctx, round)
		if err != nil {
			return fmt.Errorf("beacon round %d: %w", round, err)
		}
		beaconValue = br.Randomness
		check(d.Beacon != nil && *d.Beacon == br.Randomness, fmt.Sprintf("beacon round %d's randomness is beacon", round),
			fmt.Sprintf("the beacon says %s, the draw %q", br.Randomness, deref(d.Beacon)))
	}

	randomness := d.Seed
	if !legacy {
		randomness = verify.Randomness(d.Seed, root, beaconValue)
		check(randomness == d.Randomness, "randomness = SHA-256(seed:entries_root[:beacon])",
			fmt.Sprintf("recomputed %s, published %s", randomness, d.Randomness))
	}
	order := verify.DrawOrder(randomness, entrants)
	first := -1
	for i := range max(len(order), len(d.Order)) {
		if i >= len(order) || i >= len(d.Order) || order[i] != d.Order[i] {
			first = i
			break
		}
	}
	check(first < 0, "the order is the entrants sorted by SHA-256(randomness:user_id)",
		fmt.Sprintf("the recomputed order first differs at place %d", first+1))

	if len(differs) > 0 {
		return fmt.Errorf("draw of raffle %d does not verify:\n  %s", id, strings.Join(differs, "\n  "))
	}
	fmt.Fprintf(out, "draw verified: raffle %d, %d entries, randomness %s\n", id, len(d.Order), randomness)
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
