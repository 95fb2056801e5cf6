package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/seckill/seckill/cmd/seckill/app"
	"github.com/seckill/seckill/cmd/seckill/bench"
	"github.com/seckill/seckill/cmd/seckill/bench/scenarios"
	"github.com/seckill/seckill/db/fair"
	"github.com/seckill/seckill/db/goods"
	"github.com/seckill/seckill/web/ratelimit"
)

// runBench is `seckill bench`: it loads a server and writes the report. The
// bench itself is cmd/seckill/bench/scenarios; this file parses the
// command's flags and gives it the in-process server (openBenchServer).
func runBench(ctx context.Context, args []string) error {
	o, err := scenarios.ParseOptions(args)
	if err != nil {
		return err
	}
	if o.CPUProfile != "" {
		f, err := os.Create(o.CPUProfile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if o.Trace != "" {
		f, err := os.Create(o.Trace)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	report, err := benchRun(ctx, o)
	if err != nil {
		return err
	}
	if err := report.WriteFiles(o.Out); err != nil {
		return err
	}
	fmt.Println(report.Markdown())
	fmt.Printf("report written to %s/report.{json,md,png}\n", o.Out)
	if report.Failed() {
		return fmt.Errorf("bench: an invariant was violated")
	}
	return nil
}

// benchRun runs the bench with o, on this binary's own server when o names none.
func benchRun(ctx context.Context, o *scenarios.Options) (*bench.Report, error) {
	return scenarios.Run(ctx, o, openBenchServer)
}

// openBenchServer is the bench's scenarios.Opener: a Main as `seckill
// serve` runs it, on a free loopback port, with the naive baseline's
// routes, and its twins: web processes on the same Redis and database.
func openBenchServer(ctx context.Context, s scenarios.Settings) (*scenarios.Server, error) {
	cfg := app.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DBPath = s.DBPath
	cfg.DatabaseURL = s.DatabaseURL
	cfg.RedisURL = s.RedisURL
	if s.WaitTimeout > 0 {
		cfg.RedisWaitTimeout = s.WaitTimeout
	}
	cfg.SessionSecret = s.SessionSecret
	cfg.TrustedProxies = s.TrustedProxies
	cfg.AdminPassword = s.AdminPassword
	m := app.NewMain(cfg, app.ModeServe)
	m.Log = app.DiscardLogger()
	m.Naive = true
	if err := m.Open(ctx); err != nil {
		m.Close()
		return nil, err
	}
	twin := func(ctx context.Context, tw scenarios.Twin) (string, func(), error) {
		c := cfg
		c.RedisURL = m.Redis.URL
		if tw.NoLimits {
			c.RateGrab, c.RateIP, c.RateAuth = ratelimit.Rate{}, ratelimit.Rate{}, ratelimit.Rate{}
		}
		if tw.NoWait {
			c.RedisWaitReplicas = "0"
		}
		tm := app.NewMain(c, app.ModeWeb)
		tm.Log = app.DiscardLogger()
		if err := tm.Open(ctx); err != nil {
			tm.Close()
			return "", nil, err
		}
		return tm.URL(), func() { tm.Close() }, nil
	}
	return &scenarios.Server{
		URL: m.URL(), Backend: m.Backend, Accounts: m.Accounts, Tokens: m.Tokens,
		Goods: app.AreaService[*goods.Service](m, "goods"), Fair: app.AreaService[*fair.Service](m, "fair"),
		SQL: m.SQL, Redis: m.Redis, Twin: twin, Close: func() { m.Close() },
	}, nil
}
