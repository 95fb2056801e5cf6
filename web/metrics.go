package web

import (
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the web process's Prometheus series.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	// series holds each route's resolved counter and histogram, so a request
	// pays one map read instead of hashing labels and copying strings.
	series sync.Map // routeKey → *routeSeries
}

type routeKey struct {
	method, route string
	status        int
}

type routeSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// observe records one request. method and route may point into Fiber's
// reused buffers: they are copied only when a new series is made.
func (m *metrics) observe(method, route string, status int, seconds float64) {
	k := routeKey{method, route, status}
	v, ok := m.series.Load(k)
	if !ok {
		k.method, k.route = strings.Clone(method), strings.Clone(route)
		v, _ = m.series.LoadOrStore(k, &routeSeries{
			requests: m.requests.WithLabelValues(k.method, k.route, strconv.Itoa(status)),
			latency:  m.latency.WithLabelValues(k.method, k.route),
		})
	}
	rs := v.(*routeSeries)
	rs.requests.Inc()
	rs.latency.Observe(seconds)
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
	reg.MustRegister(m.requests, m.latency)
	return m
}
