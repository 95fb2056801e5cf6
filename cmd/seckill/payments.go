package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/seckill/seckill/cmd/seckill/app"
	"github.com/seckill/seckill/db/checkout"
)

// errMismatches makes `seckill payments reconcile` exit 1 once it has listed what it found.
var errMismatches = errors.New("payments and the store disagree")

// runPayments is `seckill payments reconcile [-since 24h] [flags]`: every
// mismatch between the payment provider's payments and the store, one a
// line; it exits non-zero when there is one.
func runPayments(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "reconcile" {
		return fmt.Errorf("usage: seckill payments reconcile [-since 24h] [flags]")
	}
	since, rest, err := sinceFlag(args[1:])
	if err != nil {
		return err
	}
	cfg, err := app.ParseConfig(rest, os.Getenv)
	if err != nil {
		return err
	}
	if cfg.StripeSecretKey == "" {
		return fmt.Errorf("no payment provider is configured (STRIPE_SECRET_KEY)")
	}
	m := app.NewMain(cfg, app.ModeWorker)
	m.Log = app.DiscardLogger()
	if err := m.Open(ctx); err != nil {
		m.Close()
		return err
	}
	n, err := reconcilePayments(ctx, m, since, out)
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%w: %d mismatches", errMismatches, n)
	}
	return nil
}

// reconcilePayments writes each mismatch of the payments created in the
// last since and answers how many it found.
func reconcilePayments(ctx context.Context, m *app.Main, since time.Duration, out io.Writer) (int, error) {
	co := app.AreaService[*checkout.Service](m, "checkout")
	from := co.Now().Add(-since)
	ms, err := co.Reconcile(ctx, from)
	if err != nil {
		return 0, err
	}
	for _, x := range ms {
		fmt.Fprintf(out, "%s\torder %d\t%s\t%s\n", x.Kind, x.OrderID, x.Ref, x.Detail)
	}
	fmt.Fprintf(out, "%d mismatches between the provider and the store since %s\n", len(ms), from.UTC().Format(time.RFC3339))
	return len(ms), nil
}

// sinceFlag takes -since (a duration, default 24h) out of args.
func sinceFlag(args []string) (time.Duration, []string, error) {
	since, rest := 24*time.Hour, []string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		v, ok := "", false
		switch {
		case a == "-since" || a == "--since":
			if i+1 >= len(args) {
				return 0, nil, fmt.Errorf("-since needs a duration, like 24h")
			}
			v, ok = args[i+1], true
			i++
		case strings.HasPrefix(a, "-since=") || strings.HasPrefix(a, "--since="):
			_, v, _ = strings.Cut(a, "=")
			ok = true
		}
		if !ok {
			rest = append(rest, a)
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, nil, fmt.Errorf("-since %q must be a positive duration, like 24h", v)
		}
		since = d
	}
	return since, rest, nil
}
