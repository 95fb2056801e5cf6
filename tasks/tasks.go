// Package tasks holds the background work that runs on Asynq: each kind of
// task is a TypeX constant ("area:verb"), a NewXTask constructor and a handler
// whose fields are the interfaces it needs.
package tasks

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
)

// Area is one promotion's background work: its handlers and periodic tasks.
type Area interface {
	Register(mux *asynq.ServeMux)
	Periodic() []Periodic
}

// Periodic is a task the scheduler enqueues on a cron spec ("@every 1s").
type Periodic struct {
	Spec string
	Task *asynq.Task
	Opts []asynq.Option
}

// Metrics counts processed tasks by type and outcome.
type Metrics struct {
	Processed *prometheus.CounterVec
	Duration  *prometheus.HistogramVec
}

// NewMetrics registers the task metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seckill_tasks_processed_total", Help: "Background tasks processed, by type and result.",
		}, []string{"type", "result"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "seckill_task_duration_seconds", Help: "Time spent in task handlers, by type.",
		}, []string{"type"}),
	}
	reg.MustRegister(m.Processed, m.Duration)
	return m
}

// NewServeMux returns a mux with every area's handlers behind logging and metrics.
func NewServeMux(log *slog.Logger, m *Metrics, areas ...Area) *asynq.ServeMux {
	mux := asynq.NewServeMux()
	mux.Use(observe(log, m))
	for _, a := range areas {
		a.Register(mux)
	}
	return mux
}

// PeriodicOf lists the periodic tasks of every area.
func PeriodicOf(areas ...Area) []Periodic {
	var all []Periodic
	for _, a := range areas {
		all = append(all, a.Periodic()...)
	}
	return all
}

func observe(log *slog.Logger, m *Metrics) asynq.MiddlewareFunc {
	return func(next asynq.Handler) asynq.Handler {
		return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
			start := time.Now()
			err := next.ProcessTask(ctx, t)
			result := "ok"
			if errors.Is(err, ErrHeld) { // waits for a steering switch: no failure
				result = "held"
			} else if err != nil {
				result = "error"
				log.Warn("task failed", "type", t.Type(), "err", err)
			}
			if m != nil {
				m.Processed.WithLabelValues(t.Type(), result).Inc()
				m.Duration.WithLabelValues(t.Type()).Observe(time.Since(start).Seconds())
			}
			return err
		})
	}
}

// Queues, by priority: expiry and payments must not wait behind reminders.
const (
	QueueCritical = "critical"
	QueueDefault  = "default"
	QueueLow      = "low"
)
