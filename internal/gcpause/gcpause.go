// Package gcpause holds the garbage collector off during a short burst of
// allocation whose result stays live, such as reading a checkpoint's
// inventory: there every collection would mark a heap that is still growing
// and free almost nothing, and in a young process (the CLI) the collector
// otherwise runs several times before the burst ends.
package gcpause

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

var (
	mu      sync.Mutex
	holders int
	percent int   // GOGC before the first hold
	limit   int64 // memory limit before the first hold
)

// Hold turns the collector off until release is called. A memory limit
// bounds the hold: once the Go runtime's memory grows by budget bytes past
// what it was at the first hold, the collector runs again (never above a
// limit the program had set). Holds nest and may overlap across goroutines;
// the last release restores the settings found by the first hold. The first
// hold waits for a collection already marking to finish (debug.SetGCPercent
// does), which in a short-lived CLI is rarely the case.
func Hold(budget int64) (release func()) {
	mu.Lock()
	defer mu.Unlock()
	if holders == 0 {
		s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
		metrics.Read(s)
		now := int64(0)
		if s[0].Value.Kind() == metrics.KindUint64 {
			now = int64(min(s[0].Value.Uint64(), math.MaxInt64/2))
		}
		limit = debug.SetMemoryLimit(-1)
		debug.SetMemoryLimit(min(limit, now+budget))
		percent = debug.SetGCPercent(-1)
	}
	holders++
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if holders--; holders == 0 {
				debug.SetGCPercent(percent)
				debug.SetMemoryLimit(limit)
			}
		})
	}
}
