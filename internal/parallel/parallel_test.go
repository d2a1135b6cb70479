package parallel

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestMapOrderAndBound(t *testing.T) {
	in := make([]int, 40)
	for i := range in {
		in[i] = i
	}
	var running, peak atomic.Int32
	out, err := Map(context.Background(), in, 3, func(_ context.Context, i, v int) int {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		// Later inputs finish first, so order must come from the index.
		time.Sleep(time.Duration(40-i) * 100 * time.Microsecond)
		running.Add(-1)
		return v * v
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range out {
		if v != i*i {
			t.Fatalf("out[%d] = %d, want %d", i, v, i*i)
		}
	}
	if p := peak.Load(); p != 3 {
		t.Errorf("peak concurrency %d, want 3", p)
	}
}

func TestMapCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Int32
	out, err := Map(ctx, make([]int, 10), 2, func(ctx context.Context, i, _ int) string {
		started.Add(1)
		if i == 1 {
			cancel()
		}
		<-ctx.Done()
		return "ran"
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want Canceled", err)
	}
	if n := started.Load(); n != 2 {
		t.Errorf("%d calls started after cancel, want the 2 already running", n)
	}
	if out[0] != "ran" || out[1] != "ran" || out[9] != "" {
		t.Errorf("results %q", out)
	}
}

func TestMapZeroLimitAndEmpty(t *testing.T) {
	out, err := Map(context.Background(), []string{"a", "b"}, 0, func(_ context.Context, _ int, v string) string { return v + v })
	if err != nil || out[0] != "aa" || out[1] != "bb" {
		t.Errorf("%q %v", out, err)
	}
	if out, err := Map(context.Background(), []int(nil), 4, func(context.Context, int, int) int { return 1 }); err != nil || len(out) != 0 {
		t.Errorf("%v %v", out, err)
	}
}
