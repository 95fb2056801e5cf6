package web

import "github.com/prometheus/client_golang/prometheus"

// metrics are the web process's Prometheus series.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	sockets  prometheus.Gauge
	dropped  prometheus.Counter
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
		sockets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seckill_websocket_connections", Help: "Open WebSocket connections.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seckill_websocket_dropped_total", Help: "WebSocket clients dropped for reading too slowly.",
		}),
	}
	reg.MustRegister(m.requests, m.latency, m.sockets, m.dropped)
	return m
}
