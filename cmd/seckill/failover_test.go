package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill/seckill/db/dbtest"
)

// failoverRig is the colleague's deployment at a smaller scale: a Redis
// Cluster of three masters with a replica each, two web processes, a worker
// and PostgreSQL, with one hot goods on sale.
type failoverRig struct {
	cluster         *redisCluster
	hosts           *hosts
	webs            []*testApp
	tokens          []string
	goods           goodsJSON
	master, replica int // ports of the node holding the goods' slot and of its replica
}

// startFailoverRig skips unless the test can start a Redis Cluster and has
// a PostgreSQL (DATABASE_URL); then it starts everything and puts a goods
// of stock units, limit per shopper, on sale for shoppers.
func startFailoverRig(t *testing.T, shoppers int, stock, limit int64) *failoverRig {
	t.Helper()
	needRedisBinaries(t)
	if os.Getenv("DATABASE_URL") == "" {
		t.Skip("failover test: set DATABASE_URL to a PostgreSQL that separate processes can share")
	}
	if testing.Short() {
		t.Skip("failover test builds the binary and starts a Redis Cluster and processes")
	}
	r := &failoverRig{cluster: startRedisCluster(t)}
	r.hosts = &hosts{t: t, bin: buildSeckill(t), db: dbtest.DatabaseURL(t), redis: r.cluster.URL()}
	r.hosts.start("worker-1", ModeWorker)
	r.webs = []*testApp{r.hosts.start("web-1", ModeWeb), r.hosts.start("web-2", ModeWeb)}
	for i := 0; i < shoppers; i++ {
		tok, _ := r.webs[i%2].newUser()
		r.tokens = append(r.tokens, tok)
	}
	merchant, _ := r.webs[0].newMerchant()
	sl := r.webs[0].createSlot(merchant, -time.Minute, time.Hour)
	r.goods = r.webs[0].createGoods(merchant, sl.ID, stock, limit)
	r.master, r.replica = r.cluster.ownerOf(goodsTag(r.goods.ID))
	t.Logf("goods %d (%s, slot %d) lives on master %d, replica %d", r.goods.ID, goodsTag(r.goods.ID),
		r.cluster.keySlot(goodsTag(r.goods.ID)), r.master, r.replica)
	return r
}

// killMasterMidSale runs the grab load, kills the goods' master with SIGKILL
// once every web process is serving grabs, waits for its replica's
// promotion, and goes on until every web process has served after answers
// since the promotion (or the bound passes: a stuck run). It returns every
// answer, the kill and the promotion.
func (r *failoverRig) killMasterMidSale(t *testing.T, loops, after int) (answers []grabAnswer, killed, promoted time.Time) {
	t.Helper()
	load := startGrabLoad(r.webs, r.tokens, r.goods.ID, loops, 10*time.Millisecond)
	if !load.waitUntil(2*time.Minute, func(as []grabAnswer) bool {
		return slices.Min(servedSince(as, time.Time{}, len(r.webs))) >= 20
	}) {
		load.stop()
		t.Fatalf("the sale did not start on every web process: served %v", servedSince(load.snapshot(), time.Time{}, len(r.webs)))
	}
	killed = time.Now()
	r.cluster.kill(r.master)
	promoted = r.cluster.waitPromotion(r.replica, time.Minute)
	load.waitUntil(3*time.Minute, func(as []grabAnswer) bool {
		return slices.Min(servedSince(as, promoted, len(r.webs))) >= after
	})
	return load.stop(), killed, promoted
}

// logHostLines logs the lines of each web process's log that mention
// errors, at most n each: what the processes saw of the failover.
func (r *failoverRig) logHostLines(t *testing.T, n int) {
	t.Helper()
	for _, name := range []string{"web-1", "web-2", "worker-1"} {
		var lines []string
		dials := 0 // go-redis's own line per failed dial, counted
		for _, line := range strings.Split(r.hosts.log(name), "\n") {
			if strings.HasPrefix(line, "redis:") && strings.Contains(line, "failed to dial") {
				dials++
			} else if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") || strings.HasPrefix(line, "redis:") {
				lines = append(lines, line)
			}
		}
		if len(lines) > n {
			lines = append(lines[:n], "...")
		}
		t.Logf("%s's log, warnings and errors (and %d lines of go-redis's failed dials):\n%s", name, dials, strings.Join(lines, "\n"))
	}
}

// An experiment, not an assertion: the hot goods' master is killed mid-sale
// and the test logs, per 100 ms, what each web process answered relative
// to the kill and to the replica's promotion, when each served grabs again,
// and every 500 with its body.
func TestFailoverDiagnosis(t *testing.T) {
	r := startFailoverRig(t, 80, 5000, 100)
	answers, killed, promoted := r.killMasterMidSale(t, 32, 50)
	logTimeline(t, answers, killed, promoted, len(r.webs))
	logReport(t, analyse(answers, promoted, len(r.webs)), killed, promoted)
	r.logHostLines(t, 60)
}
