package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"phase0/python/bridge"
	"phase0/python/worker"
)

const (
	vocab       = 151936 // Qwen2/Qwen3 vocabulary: the largest logits vector phase0 moves
	bridgeCalls = 50
	testModule  = "p0test" // worker/testdata/p0test.py; its logits op returns a cached vector
)

var logitsArgs = json.RawMessage(fmt.Sprintf(`{"n":%d}`, vocab))

func perCallRate(per time.Duration) string {
	return fmt.Sprintf("%.2f ms/call, %.0f MB/s", float64(per.Microseconds())/1000, float64(vocab*4)/1e6/per.Seconds())
}

// workerRoundTrip times logits calls through a phase0 __worker child: a run
// with one call (start, Python init, imports, exit) and a run with 1+50
// calls; the difference is the cost of 50 round trips.
func (b *bench) workerRoundTrip() error {
	opts := worker.Options{
		Python:    b.python,
		ExtraPath: []string{filepath.Join(b.root, "python", "worker", "testdata")},
		Timeout:   2 * time.Minute,
		Exe:       []string{b.phase0, worker.Subcommand},
	}
	session := func(calls int) (time.Duration, error) {
		start := time.Now()
		sess, err := worker.Start(context.Background(), opts, testModule)
		if err != nil {
			return 0, err
		}
		defer sess.Close()
		for i := range calls {
			floats, err := sess.Call("logits", map[string]int{"n": vocab}, nil)
			if err != nil {
				return 0, err
			}
			if len(floats) != vocab {
				return 0, fmt.Errorf("call %d returned %d floats, want %d", i, len(floats), vocab)
			}
		}
		sess.Close()
		return time.Since(start), nil
	}
	one, err := session(1)
	if err != nil {
		return err
	}
	many, err := session(1 + bridgeCalls)
	if err != nil {
		return err
	}
	per := max(many-one, 0) / bridgeCalls
	b.add("worker: start + 1 logits call + exit", ms(one), "-", true)
	b.add(fmt.Sprintf("worker: logits round trip (%d floats, %d calls)", vocab, bridgeCalls), perCallRate(per), "-", true)
	return nil
}

// bridgeCall times the same op through the embedded interpreter in this
// process (no pipes, no child): the floor under the worker's round trip.
func (b *bench) bridgeCall() error {
	it, err := bridge.Start(bridge.Options{Executable: b.python, ExtraPath: []string{filepath.Join(b.root, "python", "worker", "testdata")}})
	if err != nil {
		return err
	}
	defer it.Close()
	call := func() error {
		_, floats, err := it.Call(testModule, "logits", logitsArgs)
		if err != nil {
			return err
		}
		if len(floats) != vocab {
			return fmt.Errorf("logits returned %d floats, want %d", len(floats), vocab)
		}
		return nil
	}
	if err := call(); err != nil { // imports numpy and fills the cache
		return err
	}
	start := time.Now()
	for range bridgeCalls {
		if err := call(); err != nil {
			return err
		}
	}
	per := time.Since(start) / bridgeCalls
	b.add(fmt.Sprintf("bridge (in-process): logits call (%d calls)", bridgeCalls), perCallRate(per), "-", true)
	return nil
}
