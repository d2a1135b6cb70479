// Command phase0 runs Phase 0 of bringing a HuggingFace decoder-only LLM up on
// AMD NPU2 with the mlir-air tree: inspect, baseline, and run (everything).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"phase0/internal/cli"
	"phase0/worker"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == worker.Subcommand {
		os.Exit(worker.Main())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := cli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr, cli.Options{Version: version})
	stop()
	os.Exit(code)
}
