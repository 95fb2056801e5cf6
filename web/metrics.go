package web

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the web process's Prometheus series.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	// series holds each route's resolved counter and histogram, so a request
	// pays one map read instead of hashing labels and copying strings.
	series sync.Map // routeKey → *routeSeries

	// lastAck is when this process last acknowledged a change the flush
	// must carry to the durable store (Unix ms; 0: never).
	lastAck atomic.Int64
}

type routeKey struct {
	method, route string
	status        int
}

type routeSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
	acks     bool // a change the flush carries: a grab, pay, cancel or refund that succeeded
}

// flushedRoute tells whether a successful POST to route makes a change the
// flush carries to the durable store.
func flushedRoute(method, route string, status int) bool {
	if method != "POST" || status >= 400 || strings.HasPrefix(route, "/api/bench/") {
		return false
	}
	for _, verb := range []string{"/grab", "/pay", "/cancel", "/refund"} {
		if strings.HasSuffix(route, verb) {
			return true
		}
	}
	return false
}

// observe records one request and how long it took. method and route may point
// into Fiber's reused buffers: they are copied only when a new series is made.
func (m *metrics) observe(method, route string, status int, took time.Duration) {
	k := routeKey{method, route, status}
	v, ok := m.series.Load(k)
	if !ok {
		k.method, k.route = strings.Clone(method), strings.Clone(route)
		v, _ = m.series.LoadOrStore(k, &routeSeries{
			requests: m.requests.WithLabelValues(k.method, k.route, strconv.Itoa(status)),
			latency:  m.latency.WithLabelValues(k.method, k.route),
			acks:     flushedRoute(k.method, k.route, status),
		})
	}
	rs := v.(*routeSeries)
	rs.requests.Inc()
	rs.latency.Observe(took.Seconds())
	if rs.acks { // the wall clock is read for these alone
		m.lastAck.Store(time.Now().UnixMilli())
	}
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_http_requests_total", Help: "HTTP requests by method, route and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_http_request_duration_seconds", Help: "HTTP request latency by method and route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.requests, m.latency, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seckill_last_change_acknowledged_timestamp_seconds",
		Help: "When this process last acknowledged a grab, pay, cancel or refund, a change the flush carries to the durable store (Unix seconds; 0: never).",
	}, func() float64 { return float64(m.lastAck.Load()) / 1000 }))
	return m
}
