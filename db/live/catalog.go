package live

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/rdb"
)

// The catalog is what every shopper reads (slots, goods, the front page's
// cards), which each web process keeps in memory. A change to it that no
// stock event carries (a merchant creates, edits, hides or ends a sale; a
// raffle is drawn) bumps the catalog's generation, a counter in Redis, and
// announces the new generation on Channel under TopicCatalog. Every process
// hears the announcement through its live subscription and reloads; it also
// reads the counter on a slow poll (CatalogPoll in db/goods), so a lost
// message or a reconnect costs at most one poll.

// TopicCatalog is the topic of catalog changes on Channel; its event is the new
// generation. No socket can subscribe to it.
const TopicCatalog = "catalog"

// CatalogKey is the catalog's generation counter on rdb's logical database (as ChannelOf).
func CatalogKey(c redis.UniversalClient) string { return rdb.PerDatabase(c, "seckill:catalog") }

// CatalogChanged bumps the catalog's generation and tells every web process.
// A failure is returned for the caller to log: the change itself is made,
// and the processes find the new generation on their next poll at worst.
func (e *Events) CatalogChanged(ctx context.Context) error {
	gen, err := e.rdb.Incr(ctx, CatalogKey(e.rdb)).Result()
	if err != nil {
		return fmt.Errorf("bump the catalog: %w", err)
	}
	msg := Message{Topic: TopicCatalog, Event: []byte(strconv.FormatInt(gen, 10))}
	return e.ch.publish(ctx, e.rdb, TopicCatalog, msg.Encode()).Err()
}

// CatalogGeneration reads the catalog's generation (0 before the first change).
func CatalogGeneration(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	n, err := rdb.Get(ctx, CatalogKey(rdb)).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	return n, err
}
