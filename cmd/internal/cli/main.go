package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Main is the phase0 command: Execute with SIGINT, SIGTERM and SIGHUP
// cancelling the run (exit 130, one report, the record untouched).
func Main(args []string, version string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	return Execute(ctx, args, os.Stdout, os.Stderr, Options{Version: version})
}
