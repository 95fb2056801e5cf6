package app

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/seckill/seckill/db/checkout"
	"github.com/seckill/seckill/db/fair"
)

// registerOpsMetrics adds the series the alerts and the dashboard
// (docs/ops) read beside those of the web server, the tasks and the store:
// the waiting rooms the health gate holds paused.
func (m *Main) registerOpsMetrics() {
	f := AreaService[*fair.Service](m, "fair")
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seckill_waiting_rooms_paused",
		Help: "Open waiting rooms whose automatic outflow the health gate holds at zero, at this web process's last tick.",
	}, func() float64 { return float64(f.PausedRooms()) }))
	co := AreaService[*checkout.Service](m, "checkout")
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seckill_payment_mismatches",
		Help: "Mismatches between the payment provider's payments of the last day and the store, at this worker's last reconciliation (-1: none ran, or no provider).",
	}, func() float64 { return float64(co.LastMismatches()) }))
}
