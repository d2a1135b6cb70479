// Package opstest gives a test binary one warm Python session of
// phase0_shim.ops, shared by its tests: torch and transformers are imported
// once per test package, not once per request (the orchestrator's tests
// share sessions the same way, through warm.Sessions).
//
// A test package using it runs its TestMain through Main:
//
//	func TestMain(m *testing.M) { os.Exit(opstest.Main(m)) }
package opstest

import (
	"context"
	"os"
	"sync"
	"testing"

	"phase0/internal/testenv"
	"phase0/python/ops"
	"phase0/python/worker"
)

var (
	mu     sync.Mutex
	shared *ops.Client
	python string // the interpreter shared runs
)

// Main runs the tests and then ends the shared session. When the binary is
// re-executed as the worker child, it is the worker instead.
func Main(m *testing.M) int {
	if len(os.Args) > 1 && os.Args[1] == worker.Subcommand {
		return worker.Main()
	}
	code := m.Run()
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		shared.Close()
	}
	return code
}

// Client returns the binary's shared client of phase0_shim.ops, started on
// testenv.Python(t) the first time and reset (op reset_session: modules
// imported from outside the interpreter's own folders are forgotten) every
// later time, so each test starts from what a new session would give it
// but torch. A session that died is replaced. Tests that take the client
// must not run in parallel: the reset of one would pull the modules from
// under another.
func Client(t testing.TB) *ops.Client {
	t.Helper()
	py := testenv.Python(t)
	mu.Lock()
	defer mu.Unlock()
	ctx := context.Background()
	if shared != nil && python == py {
		if _, err := shared.ResetSession(ctx); err == nil {
			return shared
		}
	}
	if shared != nil {
		shared.Close()
		shared = nil
	}
	// The child is this test binary, re-executed with worker.Subcommand (Main).
	c := ops.New(func(ctx context.Context) (ops.Session, error) {
		return worker.Start(ctx, worker.Options{Python: py, ExtraPath: []string{testenv.PyShim()}}, ops.Module)
	})
	// Start it now, so the tests only ever read the started session.
	if _, err := c.Environment(ctx); err != nil {
		c.Close()
		t.Fatalf("starting the shared %s session on %s: %v", ops.Module, py, err)
	}
	shared, python = c, py
	return c
}
