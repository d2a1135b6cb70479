package orchestrator

import (
	"context"
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"

	"phase0/gate/verdict"
	"phase0/gate/weights"
	"phase0/read/safetensors"
	"phase0/run/chain"
)

// scanStage reads every tensor byte and returns gate 1 again, with the
// NaN/Inf counts.
func scanStage(ctx context.Context, st *state) (*weights.Result, outcome, error) {
	s, inv := st.in.s, st.inv()
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
	found, err := safetensors.Scan(ctx, st.facts.model.Dir, inv, s.Workers, func(done, _ int64) {
		if bar != nil {
			_ = bar.Set64(done)
		}
	})
	if bar != nil {
		_ = bar.Finish()
	}
	if ctx.Err() != nil {
		return nil, outcome{}, fmt.Errorf("%w during the scan: %w", chain.ErrInterrupted, ctx.Err())
	}
	scanned := st.sections.weights.Clone()
	if err != nil {
		scanned.Fail(fmt.Errorf("scanning tensors: %w", err))
		return scanned, outcome{Status: verdict.Fail, Detail: err.Error()}, nil
	}
	nf := make([]weights.NonFinite, 0, len(found))
	for _, f := range found {
		nf = append(nf, weights.NonFinite{Name: f.Name, Count: f.NaN + f.Inf, NaN: f.NaN, Inf: f.Inf})
	}
	scanned.AddNonFinite(nf)
	if st.sections.weights.Status == verdict.Skip && scanned.Status == verdict.Pass {
		// A deployed family's reference: the tensor set was not checked
		// (deployedWeights); the scan found no NaN/Inf, which is all it says.
		scanned.Status, scanned.Summary = verdict.Skip, st.sections.weights.Summary+"; no tensor with NaN/Inf"
	}
	secs := time.Since(start).Seconds()
	detail := fmt.Sprintf("%.1f MiB at %.0f MiB/s, %d tensor(s) with NaN/Inf", float64(inv.TotalBytes)/(1<<20), float64(inv.TotalBytes)/(1<<20)/max(secs, 1e-9), len(nf))
	return scanned, outcome{Status: scanned.Status, Detail: detail}, nil
}
