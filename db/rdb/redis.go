package rdb

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Redis is the hot store: a real Redis when a URL is given, else an embedded in-process one.
type Redis struct {
	Client   redis.UniversalClient
	URL      string // what Asynq and Asynqmon connect to
	Embedded bool

	mini *miniredis.Miniredis
	stop chan struct{}
}

// Open connects to url, or starts an embedded in-memory Redis when url is empty.
func Open(ctx context.Context, url string) (*Redis, error) {
	r := &Redis{URL: url}
	if url == "" {
		m := miniredis.NewMiniRedis()
		if err := m.Start(); err != nil {
			return nil, fmt.Errorf("start embedded redis: %w", err)
		}
		r.mini, r.Embedded, r.URL = m, true, "redis://"+m.Addr()
		r.stop = make(chan struct{})
		go r.tickEmbeddedClock()
	}
	opt, err := redis.ParseURL(r.URL)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	opt.PoolSize = 64
	r.Client = redis.NewClient(opt)
	if err := r.Client.Ping(ctx).Err(); err != nil {
		r.Close()
		return nil, fmt.Errorf("redis at %s does not answer: %w", r.URL, err)
	}
	return r, nil
}

// tickEmbeddedClock makes key TTLs run out in the embedded Redis, which only
// moves its clock when told to.
func (r *Redis) tickEmbeddedClock() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.mini.FastForward(time.Second)
		}
	}
}

// Close closes the client and stops the embedded server if there is one.
func (r *Redis) Close() error {
	var err error
	if r.Client != nil {
		err = r.Client.Close()
	}
	if r.mini != nil {
		close(r.stop)
		r.mini.Close()
	}
	return err
}
