package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/seckill/seckill/tasks"
)

// A worker-only process serves no HTTP but runs the tasks a web process enqueues.
func TestWorkerProcessRunsEnqueuedTasks(t *testing.T) {
	web := startApp(t)
	cfg := web.Config
	cfg.DBPath = filepath.Join(t.TempDir(), "worker.db")
	cfg.RedisURL = web.Redis.URL
	worker := startMain(t, cfg, ModeWorker)
	if worker.URL != "" || worker.Web != nil {
		t.Fatal("a worker process must not serve HTTP")
	}
	// Stop the serve process's own worker so only the worker process can take the task.
	web.Worker.Shutdown()
	web.Worker = nil
	if _, err := web.Client.Enqueue(tasks.NewFlushRunTask()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the worker process to run flush:run", func() bool {
		n, err := testutil.GatherAndCount(worker.Registry, "seckill_tasks_processed_total")
		return err == nil && n > 0
	})
}
