package views

import (
	"context"
	"strings"
)

// raffleCheckNotes are the comments of RaffleCheckCommand, which the page
// shows in the reader's language (the commands stay as they are).
var raffleCheckNotes = []string{
	"every check (-beacon URL when a beacon round is named)",
	"or by hand:",
	"prints seed_hash",
	"randomness",
	"prints order; the first winners won",
}

// raffleCheckIn is RaffleCheckCommand with its comments in the reader's language.
func raffleCheckIn(ctx context.Context, origin string, goodsID int64) string {
	cmd := RaffleCheckCommand(origin, goodsID)
	for _, n := range raffleCheckNotes {
		cmd = strings.Replace(cmd, "# "+n, "# "+T(ctx, n), 1)
	}
	return cmd
}
