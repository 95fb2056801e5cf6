package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hibiken/asynq"
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
	// The scheduler's periodic tasks run in the worker too, so only this
	// task's ID, kept inspectable after success by Retention, shows that the
	// worker took what the web process enqueued.
	id := "modes-test-" + t.Name()
	if _, err := web.Client.Enqueue(tasks.NewCouponExpireTask(), asynq.TaskID(id), asynq.Retention(time.Hour)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the worker process to complete task "+id, func() bool {
		got, err := web.Inspector.GetTaskInfo(tasks.QueueLow, id)
		return err == nil && got.State == asynq.TaskStateCompleted
	})
}
