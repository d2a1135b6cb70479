package gcpause

import (
	"math"
	"runtime/debug"
	"testing"
)

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestHoldNestsAndRestores(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(77))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))

	outer := Hold(64 << 20)
	if p := gcPercent(); p != -1 {
		t.Fatalf("GOGC %d during a hold, want off (-1)", p)
	}
	if l := debug.SetMemoryLimit(-1); l == math.MaxInt64 {
		t.Fatalf("no memory limit during a hold")
	}
	inner := Hold(1 << 30)
	inner()
	inner() // a second call changes nothing
	if p := gcPercent(); p != -1 {
		t.Fatalf("GOGC %d after the inner release, want still off", p)
	}
	outer()
	if p, l := gcPercent(), debug.SetMemoryLimit(-1); p != 77 || l != math.MaxInt64 {
		t.Fatalf("after the last release GOGC %d, limit %d; want 77 and no limit", p, l)
	}

	// A limit the program set is never raised.
	debug.SetMemoryLimit(1 << 20)
	release := Hold(1 << 30)
	if l := debug.SetMemoryLimit(-1); l != 1<<20 {
		t.Errorf("limit %d during a hold, want the program's 1 MiB", l)
	}
	release()
	if l := debug.SetMemoryLimit(-1); l != 1<<20 {
		t.Errorf("limit %d after the hold, want 1 MiB", l)
	}
}
