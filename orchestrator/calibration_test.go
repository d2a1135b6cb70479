package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/testenv"
	"phase0/judge"
	"phase0/verdict"
)

// TestGate2PerplexityCalibration is the calibration of gate 2's degeneracy
// rule, on real models through the real runner: the default model
// (SmolLM2-135M, converted once and cached) and the trained tiny model of
// every family pass far below max_perplexity_ratio × V, while random
// initialisations of every family at SmolLM2's 49,152-token vocabulary,
// sigma 0.02 to 1.0, fail with the perplexity reason. Slow (one baseline per
// model): skipped with -short.
func TestGate2PerplexityCalibration(t *testing.T) {
	if testing.Short() {
		t.Skip("calibration runs 21 baselines")
	}
	ctx := context.Background()
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-26s %6s %7s %12s %10s %10s  %s\n", "model", "V", "tokens", "perplexity", "limit", "ppl/V", "gate 2")
	row := func(name string, r *Report) *judge.Calibration {
		t.Helper()
		b := r.Gates.HFBaseline
		if b == nil || b.Calibration == nil {
			t.Fatalf("%s: no calibration in the report (status %s, error %q)", name, r.Status, r.Error)
		}
		c := b.Calibration
		fmt.Fprintf(&table, "%-26s %6d %7d %12.4g %10.4g %10.3g  %s\n", name, c.VocabSize, c.Tokens, c.Perplexity, c.Limit, c.Ratio, b.Status)
		return c
	}
	defer func() { t.Log(table.String()) }()

	s := settingsFor(t, "")
	def := BaselineRun(ctx, s, DefaultModel, "test")
	c := row("default (SmolLM2-135M)", def)
	if def.Status != verdict.Pass || c.VocabSize != 49152 {
		t.Fatalf("default model: status %s, V %d; reasons %q", def.Status, c.VocabSize, def.Gates.HFBaseline.Reasons)
	}
	// "Far below": two orders of magnitude under the limit.
	if c.Perplexity > c.Limit/100 {
		t.Errorf("default model perplexity %g is not far below the limit %g", c.Perplexity, c.Limit)
	}

	for _, family := range []string{"llama", "mistral", "qwen2", "qwen3"} {
		name := map[string]string{"llama": "llama-llama3"}[family]
		if name == "" {
			name = family
		}
		r := BaselineRun(ctx, settingsFor(t, ""), tiny(t, name), "test")
		c := row("trained tiny "+family, r)
		if r.Status != verdict.Pass || c.VocabSize != 512 || c.Perplexity > c.Limit {
			t.Errorf("trained tiny %s: status %s, perplexity %g, limit %g; reasons %q", family, r.Status, c.Perplexity, c.Limit, r.Gates.HFBaseline.Reasons)
		}
	}

	random := testenv.RandomModels(t, def.ModelDir)
	for _, family := range []string{"llama", "mistral", "qwen2", "qwen3"} {
		for _, sigma := range testenv.RandomSigmas {
			name := family + "-sigma" + sigma
			r := BaselineRun(ctx, settingsFor(t, ""), filepath.Join(random, name), "test")
			c := row("random "+name, r)
			reasons := strings.Join(r.Gates.HFBaseline.Reasons, "\n")
			if r.Status != verdict.Fail || !strings.Contains(reasons, "calibration passage perplexity") || c.Perplexity <= c.Limit {
				t.Errorf("random %s: status %s, perplexity %g, limit %g; reasons %q", name, r.Status, c.Perplexity, c.Limit, reasons)
			}
			// Random weights sit at or above V itself, ten times the limit.
			if c.Ratio < 0.9 {
				t.Errorf("random %s: perplexity/V %.3g, expected near or above 1", name, c.Ratio)
			}
		}
	}
}
