package scenarios

import (
	"context"
	"fmt"
	"sync"

	"github.com/seckill/seckill/cmd/seckill/bench"
	"github.com/seckill/seckill/db/model"
)

// benchRedPacket grabs a packet of Stock shares over HTTP, then checks that
// nobody won twice, the amounts add up and SQLite holds every claim.
func benchRedPacket(ctx context.Context, o *Options, t *benchTarget) (*scenario, error) {
	total := int64(o.Stock) * 100
	var created struct {
		RedPacket struct {
			ID int64 `json:"id"`
		} `json:"redpacket"`
	}
	if err := t.mustCall("POST", "/api/admin/redpackets", t.admin, map[string]any{
		"title": "bench packet", "total_cents": total, "count": o.Stock, "mode": "random", "expires_in": "1h",
	}, &created); err != nil {
		return nil, err
	}
	id := created.RedPacket.ID
	var mu sync.Mutex
	var won int64
	return &scenario{name: "HTTP red packet grab",
		op: func(ctx context.Context, w int, i int64) string {
			var g struct {
				Grab struct {
					AmountCents int64 `json:"amount_cents"`
				} `json:"grab"`
			}
			code := t.loadCall(w, fmt.Sprintf("/api/redpackets/%d/grab", id), i, &g)
			if code == "ok" {
				mu.Lock()
				won += g.Grab.AmountCents
				mu.Unlock()
			}
			return code
		},
		finish: func(ctx context.Context, res bench.Result, r *bench.Report) error {
			var stats model.RedPacketStats
			if err := t.waitFlushed(ctx, fmt.Sprintf("/api/admin/redpackets/%d/stats", id), &stats, func() bool { return stats.Flushed == stats.Claimed }); err != nil {
				return err
			}
			var grabs struct {
				Grabs []struct {
					UserID      int64 `json:"user_id"`
					AmountCents int64 `json:"amount_cents"`
				} `json:"grabs"`
			}
			if err := t.mustCall("GET", fmt.Sprintf("/api/redpackets/%d/grabs", id), t.admin, nil, &grabs); err != nil {
				return err
			}
			users := map[int64]bool{}
			twice, sum := 0, int64(0)
			for _, g := range grabs.Grabs {
				if users[g.UserID] {
					twice++
				}
				users[g.UserID] = true
				sum += g.AmountCents
			}
			ok := res.Codes["ok"]
			r.Checks = append(r.Checks,
				bench.Check{Name: "red packet: one grab per user", OK: twice == 0, Detail: fmt.Sprintf("%d users twice among %d grabs", twice, len(grabs.Grabs))},
				bench.Check{Name: "red packet: no share given twice", OK: ok <= int64(o.Stock) && stats.Claimed == ok, Detail: fmt.Sprintf("%d won, %d claimed, %d shares", ok, stats.Claimed, o.Stock)},
				bench.Check{Name: "red packet: amounts add up", OK: sum == won && sum+stats.RemainingCents == total, Detail: fmt.Sprintf("won %d + left %d = total %d (grabs list %d)", won, stats.RemainingCents, total, sum)},
				bench.Check{Name: "red packet: SQLite equals Redis after the flush", OK: stats.Flushed == stats.Claimed && int64(len(grabs.Grabs)) == stats.Claimed, Detail: fmt.Sprintf("%d flushed of %d claimed", stats.Flushed, stats.Claimed)},
			)
			return nil
		},
	}, nil
}
