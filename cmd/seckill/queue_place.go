package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/seckill/seckill/db/fair"
)

// queuePlace is `seckill queue-place <seed> <joined> <join number>`: a
// shopper's check of their place in a waiting room. With the seed and
// joined that GET /api/goods/{id}/queue/room publishes once the start has
// passed, and the join_number of their ticket, it prints the place in line
// the shuffle gave them (1: first), which their ticket's place must equal.
// One who joined after the start (join number over joined) keeps their
// join number as their place.
func queuePlace(out io.Writer, args []string) error {
	const usage = "usage: seckill queue-place <seed> <joined> <join number>"
	if len(args) != 3 {
		return fmt.Errorf("%s", usage)
	}
	joined, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil || joined < 0 {
		return fmt.Errorf("joined %q is not a count; %s", args[1], usage)
	}
	number, err := strconv.ParseInt(args[2], 10, 64)
	if err != nil || number < 1 {
		return fmt.Errorf("join number %q is not a number from 1; %s", args[2], usage)
	}
	_, err = fmt.Fprintln(out, fair.QueuePlace(args[0], joined, number-1)+1)
	return err
}
