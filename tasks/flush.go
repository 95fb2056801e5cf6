package tasks

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seckill/seckill/db/backend"
)

// RegisterFlushMetrics adds the flush lanes' series, read from st at each
// scrape: lane lease waits, batches taken over, batches fenced off, records
// committed (rows/s: its rate) and the last commit (seconds since the last
// durable write: time() minus it).
func RegisterFlushMetrics(reg prometheus.Registerer, st *backend.FlushStats) {
	counter := func(name, help string, v func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v()) })
	}
	reg.MustRegister(
		counter("seckill_flush_lease_waits_total", "Lane flushes that found the lane's lease held by another flusher (which flushes that lane).", st.LeaseWaits.Load),
		counter("seckill_flush_takeovers_total", "Flush batches found in processing, left by a flusher that died, stalled or failed, and applied.", st.Takeovers.Load),
		counter("seckill_flush_fenced_total", "Flush batches refused at commit because a newer holder of their lane had started.", st.Fenced.Load),
		counter("seckill_flush_records_total", "Records this process's flush committed to the durable store (rows/s: its rate).", st.Records.Load),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seckill_flush_last_commit_timestamp_seconds",
			Help: "When this process last committed a flush batch to the durable store (Unix seconds; 0: never).",
		}, func() float64 { return float64(st.LastCommit.Load()) / 1000 }),
	)
}
