package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"

	"phase0/safetensors"
	"phase0/verdict"
	"phase0/weights"
)

// scanStage reads every tensor byte and records NaN/Inf counts on gates.weights.
func scanStage(ctx context.Context, st *state) (verdict.Status, string, error) {
	s, inv := st.s, st.inv
	var bar *progressbar.ProgressBar
	if s.ProgressBars && inv.TotalBytes > 64<<20 {
		bar = progressbar.NewOptions64(inv.TotalBytes,
			progressbar.OptionSetWriter(s.Progress),
			progressbar.OptionSetDescription("scanning weights"),
			progressbar.OptionShowBytes(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish())
	}
	start := time.Now()
	found, err := safetensors.Scan(ctx, st.ref.Dir, inv, s.Workers, func(done, _ int64) {
		if bar != nil {
			_ = bar.Set64(done)
		}
	})
	if bar != nil {
		_ = bar.Finish()
	}
	if ctx.Err() != nil {
		return "", "", fmt.Errorf("%w during the scan: %w", errInterrupted, ctx.Err())
	}
	if err != nil {
		st.weights.Fail(fmt.Errorf("scanning tensors: %w", err))
		return verdict.Fail, err.Error(), nil
	}
	nf := make([]weights.NonFinite, 0, len(found))
	for _, f := range found {
		nf = append(nf, weights.NonFinite{Name: f.Name, Count: f.NaN + f.Inf, NaN: f.NaN, Inf: f.Inf})
	}
	st.weights.AddNonFinite(nf)
	secs := time.Since(start).Seconds()
	detail := fmt.Sprintf("%.1f MiB at %.0f MiB/s, %d tensor(s) with NaN/Inf", float64(inv.TotalBytes)/(1<<20), float64(inv.TotalBytes)/(1<<20)/max(secs, 1e-9), len(nf))
	return st.weights.Status, detail, nil
}
