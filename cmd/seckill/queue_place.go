package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/fair/verify"
)

// queuePlace is `seckill queue-place <seed_hash> <seed> <joined> <join
// number>`: a shopper's check of their place in a waiting room. With the
// seed_hash GET /api/goods/{id}/queue/room published from the goods'
// creation, the seed and joined it publishes once the start has passed,
// and the join_number of their ticket, it checks the seed against its hash
// (a seed that is not the committed one is refused, never used) and prints
// the place in line the shuffle gave them (1: first), which their ticket's
// place must equal. One who joined after the start (join number over
// joined) keeps their join number as their place.
func queuePlace(out io.Writer, args []string) error {
	const usage = "usage: seckill queue-place <seed_hash> <seed> <joined> <join number>"
	if len(args) != 4 {
		return fmt.Errorf("%s", usage)
	}
	hash, seed := strings.ToLower(strings.TrimSpace(args[0])), strings.TrimSpace(args[1])
	if len(hash) != 64 {
		return fmt.Errorf("seed_hash %q is not a SHA-256 in hex (64 digits); %s", args[0], usage)
	}
	if verify.SeedHash(seed) != hash {
		return fmt.Errorf("the seed's SHA-256 is %s, not the published seed_hash %s: this is not the room's seed", verify.SeedHash(seed), hash)
	}
	joined, err := strconv.ParseInt(args[2], 10, 64)
	if err != nil || joined < 0 {
		return fmt.Errorf("joined %q is not a count; %s", args[2], usage)
	}
	number, err := strconv.ParseInt(args[3], 10, 64)
	if err != nil || number < 1 {
		return fmt.Errorf("join number %q is not a number from 1; %s", args[3], usage)
	}
	_, err = fmt.Fprintln(out, fair.QueuePlace(seed, joined, number-1)+1)
	return err
}
