package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"

	"phase0/safetensors"
	"phase0/weights"
)

// scan reads every tensor byte and records NaN/Inf counts on gates.weights.
func (r *Report) scan(ctx context.Context, s *Settings, dir string, inv *safetensors.Inventory) (string, string) {
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
	found, err := safetensors.Scan(ctx, dir, inv, s.Workers, func(done, _ int64) {
		if bar != nil {
			_ = bar.Set64(done)
		}
	})
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		r.Gates.Weights.Fail(fmt.Errorf("scanning tensors: %w", err))
		return weights.StatusFail, err.Error()
	}
	nf := make([]weights.NonFinite, 0, len(found))
	for _, f := range found {
		nf = append(nf, weights.NonFinite{Name: f.Name, Count: f.NaN + f.Inf, NaN: f.NaN, Inf: f.Inf})
	}
	r.Gates.Weights.AddNonFinite(nf)
	secs := time.Since(start).Seconds()
	detail := fmt.Sprintf("%.1f MiB at %.0f MiB/s, %d tensor(s) with NaN/Inf", float64(inv.TotalBytes)/(1<<20), float64(inv.TotalBytes)/(1<<20)/max(secs, 1e-9), len(nf))
	return r.Gates.Weights.Status, detail
}
