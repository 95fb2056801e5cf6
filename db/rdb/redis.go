package rdb

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/seckill/seckill/db/lifecycle"
)

// Redis is the hot store: a real Redis (one server or a Redis Cluster) when
// a URL is given, else an embedded in-process one.
type Redis struct {
	Client   redis.UniversalClient // a *redis.Client, or a *redis.ClusterClient when Cluster
	URL      string                // as configured (the embedded server's address when Embedded)
	Embedded bool
	Cluster  bool // Client is a *redis.ClusterClient

	// Failovers counts the commands that failed as a node going away does
	// (FailoverError): a reader that sees it move knows a node died, was
	// paused or restarted, and what it acknowledged may be gone with it.
	Failovers atomic.Int64

	mini *miniredis.Miniredis
	loop *lifecycle.Loop // moves the embedded server's clock (Loop)
}

// poolSize is how many connections a client keeps to each server.
const poolSize = 64

// An Option changes how Open's clients behave.
type Option func(*openOptions)

type openOptions struct {
	patience time.Duration // 0: go-redis's and failFast's timeouts
}

// Patience is how long a command may wait for a free connection of the
// pool and for its reply before it fails. The defaults fail a command soon
// (a second on a cluster: failFast), as a server under a spike should; a
// test that releases thousands of commands at once on a busy machine, where
// an embedded Redis shares the cores with it, gives its own patience
// (db/dbtest: until the test's deadline), so no wait is a wall-clock window
// the test can miss.
func Patience(d time.Duration) Option { return func(o *openOptions) { o.patience = d } }

func (oo openOptions) apply(pool, read, write *time.Duration) {
	if oo.patience > 0 {
		*pool, *read, *write = oo.patience, oo.patience, oo.patience
	}
}

// Open connects to url, or starts an embedded in-memory Redis when url is
// empty. A URL listing several hosts (redis://h1:7000,h2:7001,h3:7002), or
// one host of a server that runs in cluster mode, opens a Redis Cluster client.
func Open(ctx context.Context, url string, options ...Option) (*Redis, error) {
	var oo openOptions
	for _, o := range options {
		o(&oo)
	}
	r := &Redis{URL: url}
	r.loop = lifecycle.New("embedded redis clock", r.tickEmbeddedClock)
	if url == "" {
		m := miniredis.NewMiniRedis()
		if err := m.Start(); err != nil {
			return nil, fmt.Errorf("start embedded redis: %w", err)
		}
		r.mini, r.Embedded, r.URL = m, true, "redis://"+m.Addr()
	}
	opt, copt, err := parseURL(r.URL)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	if opt != nil {
		opt.PoolSize = poolSize
		oo.apply(&opt.PoolTimeout, &opt.ReadTimeout, &opt.WriteTimeout)
		r.Client = redis.NewClient(opt)
		err := r.Client.Ping(ctx).Err()
		if err != nil && strings.Contains(err.Error(), "not allowed in cluster mode") {
			r.Close()
			return nil, fmt.Errorf("REDIS_URL: %s is a Redis Cluster node, which has only database 0", r.URL)
		} else if err != nil {
			r.Close()
			return nil, fmt.Errorf("redis at %s does not answer: %w", r.URL, err)
		}
		if r.Embedded || !clusterEnabled(ctx, r.Client) {
			r.Client.AddHook(reloadOnFailover{n: &r.Failovers})
			return r, nil
		}
		// One node of a cluster: the cluster client finds the others from it.
		r.Client.Close()
		if copt, err = redis.ParseClusterURL(r.URL); err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
	}
	copt.PoolSize = poolSize
	failFast(copt)
	oo.apply(&copt.PoolTimeout, &copt.ReadTimeout, &copt.WriteTimeout)
	cc := redis.NewClusterClient(copt)
	// On each node's client, so every attempt go-redis makes (it tries a
	// failed command again, MaxRedirects times) may find the new map.
	cc.OnNewNode(func(node *redis.Client) { node.AddHook(reloadOnFailover{c: cc, n: &r.Failovers}) })
	r.Client, r.Cluster = cc, true
	if err := r.Client.Ping(ctx).Err(); err != nil {
		r.Close()
		return nil, fmt.Errorf("redis cluster at %s does not answer: %w", r.URL, err)
	}
	return r, nil
}

// CheckURL reports what is wrong with a REDIS_URL, or nil when Open can use it.
func CheckURL(url string) error {
	_, _, err := parseURL(url)
	return err
}

// parseURL reads a one-host URL into client options, or a URL listing several
// hosts (redis://[user:password@]h1:p1,h2:p2,...[?options]) into cluster options.
func parseURL(raw string) (*redis.Options, *redis.ClusterOptions, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	at := strings.LastIndex(authority, "@") + 1
	hosts := strings.Split(authority[at:], ",")
	if !ok || len(hosts) == 1 {
		opt, err := redis.ParseURL(raw)
		return opt, nil, err
	}
	path, query, _ := strings.Cut(tail, "?")
	if path != "" && path != "/" && path != "/0" {
		return nil, nil, fmt.Errorf("%q: a Redis Cluster has only database 0", raw)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, nil, fmt.Errorf("%q: %w", raw, err)
	}
	for _, h := range hosts[1:] {
		if h == "" {
			return nil, nil, fmt.Errorf("%q: empty host in the list", raw)
		}
		q.Add("addr", h)
	}
	copt, err := redis.ParseClusterURL(scheme + "://" + authority[:at] + hosts[0] + "?" + q.Encode())
	return nil, copt, err
}

// clusterEnabled asks a server whether it runs in cluster mode.
func clusterEnabled(ctx context.Context, c redis.UniversalClient) bool {
	info, err := c.Info(ctx, "cluster").Result()
	return err == nil && strings.Contains(info, "cluster_enabled:1")
}

// AsynqConnOpt is how Asynq's server, scheduler and inspector and Asynqmon
// reach this Redis: a cluster option on a Redis Cluster.
func (r *Redis) AsynqConnOpt() asynq.RedisConnOpt {
	switch c := r.Client.(type) {
	case *redis.ClusterClient:
		o := c.Options()
		return asynq.RedisClusterClientOpt{Addrs: o.Addrs, MaxRedirects: o.MaxRedirects, Username: o.Username, Password: o.Password,
			DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout, TLSConfig: o.TLSConfig}
	case *redis.Client:
		o := c.Options()
		return asynq.RedisClientOpt{Network: o.Network, Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB,
			DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout, TLSConfig: o.TLSConfig}
	}
	panic(fmt.Sprintf("rdb: AsynqConnOpt of a %T", r.Client))
}

// ForEachServer runs fn on c's server, or on every master at once when c is
// a cluster client: commands about a whole database (FLUSHDB, KEYS, DBSIZE)
// reach one node only when sent through a cluster client. On a cluster the
// calls of fn run concurrently: what they share needs a lock.
func ForEachServer(ctx context.Context, c redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch c := c.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	}
	return fmt.Errorf("rdb: ForEachServer of a %T", c)
}

// FlushDB empties c's database: every master's on a cluster.
func FlushDB(ctx context.Context, c redis.UniversalClient) error {
	return ForEachServer(ctx, c, func(ctx context.Context, s *redis.Client) error { return s.FlushDB(ctx).Err() })
}

// DBSize counts the keys of c's database: every master's on a cluster.
func DBSize(ctx context.Context, c redis.UniversalClient) (int64, error) {
	var n atomic.Int64
	err := ForEachServer(ctx, c, func(ctx context.Context, s *redis.Client) error {
		k, err := s.DBSize(ctx).Result()
		n.Add(k)
		return err
	})
	return n.Load(), err
}

// Keys lists the keys matching pattern: every master's on a cluster. It walks
// the whole keyspace, so it is for tests and tools, never a request.
func Keys(ctx context.Context, c redis.UniversalClient, pattern string) ([]string, error) {
	var mu sync.Mutex
	var all []string
	err := ForEachServer(ctx, c, func(ctx context.Context, s *redis.Client) error {
		keys, err := s.Keys(ctx, pattern).Result()
		mu.Lock()
		all = append(all, keys...)
		mu.Unlock()
		return err
	})
	return all, err
}

// Loop moves the embedded Redis's clock a second each second until stopped
// (by Close at the latest), so its keys' TTLs run out; with a real Redis
// it returns at once. Main starts it.
func (r *Redis) Loop() *lifecycle.Loop { return r.loop }

// tickEmbeddedClock makes key TTLs run out in the embedded Redis, which only
// moves its clock when told to, until ctx ends.
func (r *Redis) tickEmbeddedClock(ctx context.Context) {
	if r.mini == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.mini.FastForward(time.Second)
		}
	}
}

// Close closes the client and stops the embedded server if there is one
// (and its clock's Loop).
func (r *Redis) Close() error {
	var err error
	if r.Client != nil {
		err = r.Client.Close()
	}
	r.loop.Stop()
	if r.mini != nil {
		r.mini.Close()
	}
	return err
}
