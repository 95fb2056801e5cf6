// Command seckill runs the flash-sale platform: `serve` (web, worker and
// scheduler in one process, the default), or `web` and `worker` apart
// (package app), and the operator's commands beside them (commands.go).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/seckill/seckill/cmd/seckill/app"
	"github.com/seckill/seckill/cmd/seckill/bench/scenarios"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "seckill:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	mode := app.ModeServe
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		mode, args = args[0], args[1:]
	}
	switch mode {
	case "bench":
		return runBench(ctx, args)
	case "bench-ws-clients", "bench-slow-bodies":
		return scenarios.Child(mode)(args)
	case "verify-draw":
		return runVerifyDraw(ctx, args, os.Stdout)
	case "queue-place":
		return queuePlace(os.Stdout, args)
	case "backup":
		return runBackup(ctx, args, os.Stdout)
	case "resend-orders":
		return runResendOrders(ctx, args, os.Stdout)
	case "payments":
		return runPayments(ctx, args, os.Stdout)
	case app.ModeServe, app.ModeWeb, app.ModeWorker:
	case "help":
		return help(os.Stdout)
	default:
		return fmt.Errorf("unknown command %q (seckill help lists them)", mode)
	}
	cfg, err := app.ParseConfig(args, os.Getenv)
	if err != nil {
		return err
	}
	m := app.NewMain(cfg, mode)
	if err := m.Open(ctx); err != nil {
		m.Close()
		return err
	}
	m.Announce()
	<-ctx.Done()
	m.Log.Info("shutting down")
	return m.Close()
}
