package fair

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/seckill/seckill/db/fair/raffle"
	"github.com/seckill/seckill/db/fair/verify"
	"github.com/seckill/seckill/db/model"
)

// The waiting room's commitment. Its shuffle's seed (queue_shuffle.go) is
// chosen when the room is made, at the goods' creation (Created) or at the
// first need of goods made a queue by an update, and kept in the store
// (queue_rooms): every script that may pass the start hands Redis that
// seed, so the shuffle is the committed one whichever process passes it,
// and a Redis that lost the room shuffles alike. Its SHA-256 is public from
// the start (QueueRoom), the seed itself once the pre-queue is shuffled:
// anyone then recomputes every place (QueuePlace, `seckill queue-place`).

// openRoom makes the goods' waiting room's seed, once; a room made already
// is left as it is.
func (s *Service) openRoom(ctx context.Context, g *model.Goods) error {
	_, err := s.roomSeed(ctx, g.ID)
	return err
}

// roomSeed returns the goods' committed seed, making it on first need.
// Once read it is kept in this process's memory: it never changes.
func (s *Service) roomSeed(ctx context.Context, goodsID int64) (string, error) {
	if v, ok := s.queues.seeds.Load(goodsID); ok {
		return v.(string), nil
	}
	read := func() (string, error) {
		var seed string
		var sealed sql.NullString
		if err := s.SQL.W.QueryRowContext(ctx, `SELECT seed, seed_sealed FROM queue_rooms WHERE goods_id = ?`, goodsID).Scan(&seed, &sealed); err != nil {
			return "", err
		}
		if sealed.Valid { // rooms made before seeds were sealed keep theirs in seed
			return raffle.Open(s.powKey(), "queue", goodsID, sealed.String)
		}
		return seed, nil
	}
	seed, err := read()
	if errors.Is(err, sql.ErrNoRows) {
		// The store keeps the seed sealed (db/fair/raffle/seal.go): a copy
		// of it does not tell the seed before the start.
		fresh := verify.NewSeed()
		sealed, serr := raffle.Seal(s.powKey(), "queue", goodsID, fresh)
		if serr != nil {
			return "", serr
		}
		if _, err = s.SQL.W.ExecContext(ctx, `INSERT INTO queue_rooms (goods_id, seed, seed_sealed, seed_hash, created_ms) VALUES (?, '', ?, ?, ?)
			ON CONFLICT DO NOTHING`, goodsID, sealed, verify.SeedHash(fresh), s.Now().UnixMilli()); err == nil {
			seed, err = read() // another process's, when it made it first
		}
	}
	if err != nil {
		return "", fmt.Errorf("the waiting room's seed of goods %d: %w", goodsID, err)
	}
	s.queues.seeds.Store(goodsID, seed)
	return seed, nil
}

// QueueRoom is the waiting room's public commitment (GET
// /api/goods/{id}/queue/room): the seed's SHA-256 from the room's making,
// how many joined before the start (so far, until it passes), and the seed
// once they were shuffled.
func (s *Service) QueueRoom(ctx context.Context, goodsID int64) (*model.QueueRoom, error) {
	g, err := s.shopperGoods(ctx, goodsID)
	if err != nil {
		return nil, err
	}
	seed, err := s.roomSeed(ctx, g.ID)
	if err != nil {
		return nil, err
	}
	v, err := s.advanceRoom(ctx, g, s.Now(), -1)
	if err != nil {
		return nil, err
	}
	room := &model.QueueRoom{GoodsID: g.ID, SeedHash: verify.SeedHash(seed), Joined: v.n}
	if v.f >= 0 {
		room.Started, room.Joined, room.Seed = true, v.f, v.seed
	}
	return room, nil
}

// advanceRoom runs the advance alone (queueTickScript) for goods at now,
// open as queueAdvanceLua's, and returns the room.
func (s *Service) advanceRoom(ctx context.Context, g *model.Goods, now time.Time, open int) (queueView, error) {
	args, err := s.queueArgs(ctx, g, now, open)
	if err != nil {
		return queueView{}, err
	}
	vals, err := queueTickScript.Run(ctx, s.Redis, []string{queueKey(g.ID), queueAdvKey(g.ID)}, args...).Slice()
	if err != nil {
		return queueView{}, fmt.Errorf("advance the waiting room of goods %d: %w", g.ID, err)
	}
	return parseQueueView(vals)
}
