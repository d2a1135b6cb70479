package worker

import (
	"os"
	"sync/atomic"
)

// childExe is the phase0 binary started as the child when Options.Exe is
// empty; unset means this executable. A host that is not the phase0 binary
// (the Python extension, loaded into python) sets it to the phase0 binary it
// ships, since re-executing python with the hidden subcommand means nothing.
var childExe atomic.Pointer[string]

// SetExecutable makes every later session start path (a phase0 binary) as
// its child.
func SetExecutable(path string) { childExe.Store(&path) }

// executable is the program a session re-executes.
func executable() (string, error) {
	if p := childExe.Load(); p != nil {
		return *p, nil
	}
	return os.Executable()
}
