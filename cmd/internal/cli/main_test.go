package cli

import (
	"os"
	"testing"

	"phase0/python/worker"
)

// envAsMain makes the test binary act as the phase0 command, so a test can
// run, signal and kill a real phase0 process.
const envAsMain = "PHASE0_TEST_AS_MAIN"

// TestMain: the worker re-executes this test binary (os.Executable), which
// must then act as the worker; with envAsMain it is phase0 itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == worker.Subcommand {
		os.Exit(worker.Main())
	}
	if os.Getenv(envAsMain) == "1" {
		os.Exit(Main(os.Args[1:], "test"))
	}
	os.Exit(m.Run())
}
