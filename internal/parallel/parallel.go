// Package parallel runs a function over inputs with bounded concurrency,
// keeping results in input order.
package parallel

import (
	"context"
	"sync"
)

// Map calls fn for each input with at most limit calls running at once
// (limit < 1 means 1) and returns the results in input order. Once ctx is
// done no further call starts; calls already running see ctx and should
// stop. The error is ctx's when some inputs never ran (their results are
// the zero value), nil otherwise.
func Map[T, R any](ctx context.Context, in []T, limit int, fn func(ctx context.Context, i int, v T) R) ([]R, error) {
	limit = max(limit, 1)
	out := make([]R, len(in))
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	var err error
	for i, v := range in {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			break
		}
		// A free slot and a done ctx can both be ready; select picks either.
		if err = ctx.Err(); err != nil {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = fn(ctx, i, v)
		}()
	}
	wg.Wait()
	return out, err
}
