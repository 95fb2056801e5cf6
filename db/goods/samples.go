package goods

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/db/goods/internal/sale"
	"github.com/seckill/seckill/db/live"
	"github.com/seckill/seckill/db/model"
	"github.com/seckill/seckill/db/rdb"
)

// MaxSamples is how many one-second samples of a goods Redis keeps: an hour.
const MaxSamples = 3600

// samplesTTL is how long a goods' samples are kept after its last one, for
// the chart of a sale that is over.
const samplesTTL = 7 * 24 * time.Hour

// sampleScript appends one sample of the goods' sale to its capped list of
// samples, at most one a second: a second worker sampling the same second
// (or a tick that came early) adds nothing.
//
// Goods of several buckets keeps samples per bucket; SampleActive and
// samples add them up per second.
//
// Goods no longer in Redis (deleted, or lost with the Redis that held it,
// after the caller read the active set) is not sampled: no list outlives
// the goods' other keys.
//
// KEYS: 1 fresh, 2 free, 3 counts, 4 seq, 5 samples, 6 info (of one bucket)
// ARGV: 1 now ms, 2 most samples kept, 3 how long the list outlives its
// last sample (ms), 4 the bucket's first sequence less one (0 for bucket 0)
// Returns the sample "at|remaining|unpaid|paid|grabs" (sampleFields), or ""
// when this second has one already or the bucket is not in Redis.
var sampleScript = redis.NewScript(sampleFields.Lua() + `
if redis.call('EXISTS', KEYS[6]) == 0 then return '' end
local now = tonumber(ARGV[1])
local last = redis.call('LINDEX', KEYS[5], -1)
if last and math.floor(tonumber(sampleFields(last)[SMP_AT]) / 1000) >= math.floor(now / 1000) then return '' end
local remaining = (tonumber(redis.call('GET', KEYS[1])) or 0) + redis.call('LLEN', KEYS[2])
local c = redis.call('HMGET', KEYS[3], 'unpaid', 'paid')
local grabs = math.max((tonumber(redis.call('GET', KEYS[4])) or 0) - tonumber(ARGV[4] or '0'), 0)
local s = sampleRecord({[SMP_AT] = ARGV[1], [SMP_REMAINING] = remaining, [SMP_UNPAID] = tonumber(c[1]) or 0, [SMP_PAID] = tonumber(c[2]) or 0, [SMP_GRABS] = grabs})
redis.call('RPUSH', KEYS[5], s)
redis.call('LTRIM', KEYS[5], -tonumber(ARGV[2]), -1)
redis.call('PEXPIRE', KEYS[5], ARGV[3])
return s
`)

// SampleEvent is the live event of one sample, sent to the goods' merchant and to admins.
type SampleEvent struct {
	Type   string       `json:"type"` // "sample"
	Sample model.Sample `json:"sample"`
}

// merchants remembers which merchant owns each sampled goods, so a tick asks the store only about new goods.
type merchants struct {
	mu sync.Mutex
	of map[int64]int64
}

// SampleActive takes this second's sample of every active goods in one
// pipelined round trip and sends each new one live to its merchant. The
// worker calls it every flush interval; a second already sampled is skipped.
func (s *Service) SampleActive(ctx context.Context) error {
	ids, err := s.ActiveGoods(ctx)
	if err != nil || len(ids) == 0 {
		return err
	}
	now := s.Now().UnixMilli()
	shards, err := s.ShardsOf(ctx, false, ids...)
	if err != nil {
		return err
	}
	run := func(eval func(p redis.Pipeliner, keys []string, base int64) *redis.Cmd) ([][]*redis.Cmd, error) {
		pipe := s.Redis.Pipeline()
		cmds := make([][]*redis.Cmd, len(ids)) // per goods, per bucket
		for i, id := range ids {
			for _, b := range sale.BucketsOf(id, shards[id]) {
				cmds[i] = append(cmds[i], eval(pipe, []string{sale.FreshKey(b), sale.FreeKey(b), sale.CountsKey(b), sale.SeqKey(b), sale.SamplesKey(b), sale.InfoKey(b)}, int64(b.N)*sale.BucketSeqSpan))
			}
		}
		_, err := pipe.Exec(ctx)
		return cmds, err
	}
	cmds, err := run(func(p redis.Pipeliner, keys []string, base int64) *redis.Cmd {
		return sampleScript.EvalSha(ctx, p, keys, now, MaxSamples, samplesTTL.Milliseconds(), base)
	})
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		cmds, err = run(func(p redis.Pipeliner, keys []string, base int64) *redis.Cmd {
			return sampleScript.Eval(ctx, p, keys, now, MaxSamples, samplesTTL.Milliseconds(), base)
		})
	}
	if err != nil && err != redis.Nil {
		return fmt.Errorf("sample goods: %w", err)
	}
	owners, err := s.owners(ctx, ids)
	if err != nil {
		return err
	}
	for i, id := range ids {
		var smps []model.Sample
		for _, cmd := range cmds[i] {
			rec, _ := cmd.Text()
			if rec == "" {
				continue
			}
			smp, err := parseSample(id, rec)
			if err != nil {
				return err
			}
			smps = append(smps, smp)
		}
		if len(smps) == 0 {
			continue
		}
		smp := sumSamples(smps)
		ev := SampleEvent{Type: "sample", Sample: smp}
		key := "sample:" + strconv.FormatInt(id, 10)
		s.Events.PublishCoalescedKey(live.TopicMerchant(owners[id]), key, ev)
		s.Events.PublishCoalescedKey(live.TopicAdmins, key+":admins", ev)
	}
	return nil
}

// owners returns the merchant of each goods, from memory or the store.
func (s *Service) owners(ctx context.Context, ids []int64) (map[int64]int64, error) {
	m := s.merchantsOf
	if m == nil {
		m = new(merchants)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.of == nil {
		m.of = map[int64]int64{}
	}
	var missing []string
	for _, id := range ids {
		if _, ok := m.of[id]; !ok {
			missing = append(missing, strconv.FormatInt(id, 10))
		}
	}
	if len(missing) > 0 {
		// IDs are integers from the active set, so they are written into the statement.
		rows, err := s.SQL.R.QueryContext(ctx, `SELECT id, merchant_id FROM goods WHERE id IN (`+strings.Join(missing, ",")+`)`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var id, owner int64
			if err := rows.Scan(&id, &owner); err != nil {
				return nil, err
			}
			m.of[id] = owner
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return m.of, nil
}

// parseSample reads a sample written by sampleScript.
func parseSample(goodsID int64, rec string) (model.Sample, error) {
	smp, err := sampleFields.Decode(rec)
	if err != nil {
		return model.Sample{}, fmt.Errorf("goods %d: %w", goodsID, err)
	}
	smp.GoodsID = goodsID
	return smp, nil
}

// Samples returns the kept samples of goods the caller manages, oldest first.
func (s *Service) Samples(ctx context.Context, by model.Claims, id int64) ([]model.Sample, error) {
	if _, err := s.Owned(ctx, by, id); err != nil {
		return nil, err
	}
	return s.samples(ctx, id)
}

func (s *Service) samples(ctx context.Context, id int64) ([]model.Sample, error) {
	bs, err := s.BucketsOfGoods(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []model.Sample
	bySecond := map[int64]int{} // second → its place in out
	for _, b := range bs {
		recs, err := s.Redis.LRange(ctx, sale.SamplesKey(b), 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("samples of goods %d: %w", id, err)
		}
		for _, r := range recs {
			smp, err := parseSample(id, r)
			if err != nil {
				return nil, err
			}
			if i, ok := bySecond[smp.At/1000]; ok { // another bucket's sample of the second: added up
				out[i] = sumSamples([]model.Sample{out[i], smp})
				continue
			}
			bySecond[smp.At/1000] = len(out)
			out = append(out, smp)
		}
	}
	if len(bs) > 1 {
		sort.Slice(out, func(i, j int) bool { return out[i].At < out[j].At })
	}
	if out == nil {
		out = []model.Sample{}
	}
	return out, nil
}

// sumSamples adds up the buckets' samples of one second (at the first's time).
func sumSamples(smps []model.Sample) model.Sample {
	sum := smps[0]
	for _, smp := range smps[1:] {
		sum.Remaining += smp.Remaining
		sum.Unpaid += smp.Unpaid
		sum.Paid += smp.Paid
		sum.Grabs += smp.Grabs
	}
	return sum
}

// SlotSamples returns the kept samples of every goods of a slot the caller manages, each goods' oldest first.
func (s *Service) SlotSamples(ctx context.Context, by model.Claims, slotID int64) ([]model.Sample, error) {
	if _, err := s.OwnedSlot(ctx, by, slotID); err != nil {
		return nil, err
	}
	gs, err := s.SlotGoodsRows(ctx, slotID)
	if err != nil {
		return nil, err
	}
	out := []model.Sample{}
	for _, g := range gs {
		smp, err := s.samples(ctx, g.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, smp...)
	}
	return out, nil
}

// sampleFields are the fields of a sample of a goods' sale,
// "at|remaining|unpaid|paid|grabs" (at in unix ms), as sampleScript writes
// them to the goods' list of samples and parseSample reads them.
var sampleFields = rdb.NewRecord("sample", "SMP_", "|",
	rdb.Field[model.Sample]{Name: "at", Int: func(s *model.Sample) *int64 { return &s.At }},
	rdb.Field[model.Sample]{Name: "remaining", Int: func(s *model.Sample) *int64 { return &s.Remaining }},
	rdb.Field[model.Sample]{Name: "unpaid", Int: func(s *model.Sample) *int64 { return &s.Unpaid }},
	rdb.Field[model.Sample]{Name: "paid", Int: func(s *model.Sample) *int64 { return &s.Paid }},
	rdb.Field[model.Sample]{Name: "grabs", Int: func(s *model.Sample) *int64 { return &s.Grabs }},
)
