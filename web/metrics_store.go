package web

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/rdb"
)

// StoreCounts are the counters of the hot and durable state a process keeps
// and its metrics read at each scrape.
type StoreCounts struct {
	Phantoms      func() int64 // phantom wins found and failed (the goods' ledger)
	WaitsShort    func() int64 // WAITs answered by fewer replicas than asked (the pipeliner)
	NotReplicated func() int64 // durable commands refused as not replicated, answered 503 (the pipeliner)
	SQLStatements func() int64 // statements sent to the durable store (sqldb.DB.Statements)
}

// RedisInfoTimeout bounds the INFO memory a scrape asks of each Redis master.
const RedisInfoTimeout = 250 * time.Millisecond

// RegisterStoreMetrics adds the series of the store's work and troubles,
// read at each scrape: SQL statements sent, phantom wins found, replica
// waits that fell short, changes refused as not replicated, and each Redis
// master's used and maximum memory.
func RegisterStoreMetrics(reg prometheus.Registerer, c redis.UniversalClient, n StoreCounts) {
	counter := func(name, help string, v func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v()) })
	}
	reg.MustRegister(
		counter("seckill_phantom_orders_total", "Acknowledged orders this process found lost with a Redis node and recorded as failed (phantom wins).", n.Phantoms),
		counter("seckill_redis_wait_short_total", "WAITs after durable changes that fewer replicas answered than were asked for.", n.WaitsShort),
		counter("seckill_redis_not_replicated_total", "Durable changes refused with 503 unavailable because no replica confirmed them in time.", n.NotReplicated),
		counter("seckill_sql_statements_total", "SQL statements this process sent to the durable store: each Exec and Query, in a transaction or not, and each transaction's begin and its commit or rollback.", n.SQLStatements),
		&redisMemory{c: c},
	)
}

// redisMemory reads INFO memory from each Redis master at scrape.
type redisMemory struct{ c redis.UniversalClient }

var (
	redisUsedDesc = prometheus.NewDesc("seckill_redis_memory_used_bytes",
		"Memory a Redis master uses (INFO memory used_memory; 0 where the server does not tell).", []string{"node"}, nil)
	redisMaxDesc = prometheus.NewDesc("seckill_redis_memory_max_bytes",
		"A Redis master's memory limit (INFO memory maxmemory; 0: no limit set, or the server does not tell).", []string{"node"}, nil)
)

func (r *redisMemory) Describe(ch chan<- *prometheus.Desc) { ch <- redisUsedDesc; ch <- redisMaxDesc }

// Collect sends each master's two gauges. A master that answers INFO memory
// with an error (the embedded Redis has no such section) reads 0 and 0; one
// that does not answer within RedisInfoTimeout is left out of this scrape.
func (r *redisMemory) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), RedisInfoTimeout)
	defer cancel()
	var mu sync.Mutex
	rdb.ForEachServer(ctx, r.c, func(ctx context.Context, s *redis.Client) error {
		info, err := s.Info(ctx, "memory").Result()
		var reply redis.Error
		if err != nil && !errors.As(err, &reply) {
			return err
		}
		used, limit := infoField(info, "used_memory"), infoField(info, "maxmemory")
		addr := s.Options().Addr
		mu.Lock()
		defer mu.Unlock()
		ch <- prometheus.MustNewConstMetric(redisUsedDesc, prometheus.GaugeValue, used, addr)
		ch <- prometheus.MustNewConstMetric(redisMaxDesc, prometheus.GaugeValue, limit, addr)
		return nil
	})
}

// infoField reads a number from an INFO answer (0 when absent).
func infoField(info, name string) float64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}
