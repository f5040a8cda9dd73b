// Command iu-runner applies the iu-core migrations and runs the route workers and queue
// health SQL: one pass for cron (tick), a long-running loop (run), and a health report
// (health). See internal/cli for the commands and exit codes.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/iu-core/event-worker/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first SIGINT/SIGTERM cancels ctx (drain); restoring the default handlers then
	// makes a second one end the process at once, even in the middle of the grace.
	go func() { <-ctx.Done(); stop() }()
	code := cli.Main(ctx, os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}
