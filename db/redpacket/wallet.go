package redpacket

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/model"
)

// maxWinnings is how many of a user's red packet winnings the wallet lists.
const maxWinnings = 500

// Winnings lists what the user got from red packets, newest first: the
// claims in the store and those a flush has not carried there yet (read
// from the claimed-by hash of each packet still active in the store, one
// pipelined round trip).
func (s *Service) Winnings(ctx context.Context, userID int64) ([]model.RedPacketWinning, error) {
	rows, err := s.SQL.R.QueryContext(ctx, `SELECT s.redpacket_id, p.title, s.amount_cents, s.grabbed_ms
		FROM redpacket_shares s JOIN redpackets p ON p.id = s.redpacket_id
		WHERE s.user_id = ? ORDER BY s.grabbed_ms DESC LIMIT `+strconv.Itoa(maxWinnings), userID)
	if err != nil {
		return nil, fmt.Errorf("winnings of user %d: %w", userID, err)
	}
	defer rows.Close()
	out := []model.RedPacketWinning{}
	seen := map[int64]bool{}
	for rows.Next() {
		var w model.RedPacketWinning
		var at int64
		if err := rows.Scan(&w.RedPacketID, &w.Title, &w.AmountCents, &at); err != nil {
			return nil, err
		}
		w.GrabbedAt = msTime(at)
		seen[w.RedPacketID] = true
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	active, err := s.list(ctx, `status = ?`, model.RedPacketActive)
	if err != nil {
		return nil, err
	}
	var pending []*model.RedPacket
	for _, p := range active {
		if !seen[p.ID] {
			pending = append(pending, p)
		}
	}
	mine, err := s.claimsOf(ctx, userID, pending)
	if err != nil {
		return nil, err
	}
	for _, p := range pending {
		if c, ok := mine[p.ID]; ok {
			out = append(out, model.RedPacketWinning{RedPacketID: p.ID, Title: p.Title, AmountCents: c.AmountCents, GrabbedAt: c.GrabbedAt})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].GrabbedAt.After(out[j].GrabbedAt) })
	return out, nil
}

// Opened tells which of the packets the user has opened, and for how much
// (packet ID → amount in cents), from Redis in one pipelined round trip;
// the packets shoppers may open are all in Redis.
func (s *Service) Opened(ctx context.Context, userID int64, list []*model.RedPacket) (map[int64]int64, error) {
	mine, err := s.claimsOf(ctx, userID, list)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]int64, len(mine))
	for id, c := range mine {
		out[id] = c.AmountCents
	}
	return out, nil
}

// claimsOf reads the user's claim of each packet from its claimed-by hash.
func (s *Service) claimsOf(ctx context.Context, userID int64, list []*model.RedPacket) (map[int64]*model.RedPacketClaim, error) {
	out := map[int64]*model.RedPacketClaim{}
	if userID == 0 || len(list) == 0 {
		return out, nil
	}
	pipe := s.Redis.Pipeline()
	cmds := make([]*redis.StringCmd, len(list))
	user := strconv.FormatInt(userID, 10)
	for i, p := range list {
		cmds[i] = pipe.HGet(ctx, claimedByKey(p.ID), user)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read claims of user %d: %w", userID, err)
	}
	for i, p := range list {
		rec := cmds[i].Val()
		if rec == "" {
			continue
		}
		c, err := parseMine(userID, rec)
		if err != nil {
			return nil, fmt.Errorf("red packet %d: %w", p.ID, err)
		}
		out[p.ID] = c
	}
	return out, nil
}
