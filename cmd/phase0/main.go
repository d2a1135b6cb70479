// Command phase0 runs Phase 0 of bringing a HuggingFace decoder-only LLM up on
// AMD NPU2 with the mlir-air tree: inspect, baseline, and run (everything).
package main

import (
	"os"

	"phase0/cmd/internal/cli"
	"phase0/python/worker"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == worker.Subcommand {
		os.Exit(worker.Main())
	}
	os.Exit(cli.Main(os.Args[1:], version))
}
