package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/seckill/seckill/cmd/seckill/app"
)

// commands are what `seckill help` lists: every command run dispatches, in
// the order an operator meets them.
var commands = []struct{ name, use, about string }{
	{app.ModeServe, "serve [flags]", "the web server and the worker in one process (the default)"},
	{app.ModeWeb, "web [flags]", "the web server only: run beside a worker"},
	{app.ModeWorker, "worker [flags]", "the worker only: flushes, expiries, reminders, draws"},
	{"backup", "backup <file> [flags]", "a consistent copy of the database, taken while the shop serves (file mode 0600)"},
	{"resend-orders", "resend-orders [flags]", "after a restore, flush again the orders, red packet claims and coupons Redis holds that the backup missed"},
	{"payments", "payments reconcile [-since 24h] [flags]", "every mismatch between the payment provider's payments and the store"},
	{"verify-draw", "verify-draw [-beacon URL] <base URL> <goods id>", "check a raffle's draw from its public record"},
	{"queue-place", "queue-place <seed_hash> <seed> <joined> <join number>", "check a place in a waiting room"},
	{"bench", "bench [flags]", "load a server and write the performance report"},
	{"bench-ws-clients", "bench-ws-clients <ws URL> <n>", "hold n WebSocket clients (started by bench)"},
	{"bench-slow-bodies", "bench-slow-bodies <URL> <n>", "hold n slow request bodies (started by bench)"},
	{"help", "help", "this list, and the flags and environment of serve, web and worker"},
}

// help writes the commands, then the configuration's flags.
func help(w io.Writer) error {
	fmt.Fprintln(w, "Usage: seckill <command> [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.use, c.about)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	_, err := app.ParseConfig([]string{"-h"}, os.Getenv)
	_, werr := fmt.Fprintln(w, err)
	return werr
}
