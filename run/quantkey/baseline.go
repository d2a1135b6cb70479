package quantkey

import (
	"context"
	"fmt"
	"time"

	"phase0/gate/baseline"
	"phase0/gate/quant"
	"phase0/gate/verdict"
	"phase0/python/ops"
	"phase0/run/chain"
	"phase0/run/orchestrator"
	"phase0/wire"
)

// gate2 is the quant_baseline stage's two results: the reference's
// bf16 baseline (gate 2) and quantized gate 2, from one op.
type gate2 struct {
	baseline *baseline.Baseline
	e2e      *quant.EndToEnd
}

// quantBaselineStage is gate 2 for a quantized key: the reference's bf16
// baseline, and in the same op (the model the baseline loaded, no second
// load) the folder's dequantized projections patched in and prefilled on
// the canonical prompt and the calibration passage; Go judges both.
func quantBaselineStage(ctx context.Context, k *keyState) (gate2, chain.Outcome, error) {
	q, cfg := k.facts.folder, k.core.Analysis().Config
	e2eArgs := wire.QuantE2EArgs{WeightsModule: q.Module, Source: q.Source, ReferenceDir: k.core.Model().Dir, NLayers: cfg.NLayers, Rule: q.Format.Bound()}
	notRun := q.E2ENotRun(k.sections.weights) // the bundle's fault is gate 1's, never the reference's
	if rec, _ := bf16Record(k); rec != nil && rec.Gates.HFBaseline != nil && len(rec.Gates.HFBaseline.Tokens) > 0 {
		// Gate 2 is the reference's own baseline, recorded as a PASS on
		// inputs that have not changed: reused; quantized gate 2 alone runs.
		b := *rec.Gates.HFBaseline
		b.Summary = fmt.Sprintf("reused from %s (inputs unchanged since %s): %s", rec.ReusedFrom.Path, rec.ReusedFrom.Recorded.Format(time.RFC3339), b.Summary)
		out := gate2{baseline: &b}
		if notRun != "" {
			out.e2e = quant.E2ENotRun(q.Format, notRun)
			return out, chain.Outcome{Status: b.Status, Detail: "bf16: " + b.Summary + "; quantized: " + out.e2e.Summary}, nil
		}
		facts, err := k.core.Py().QuantE2E(ctx, wire.QuantE2EOnlyArgs{QuantE2EArgs: e2eArgs, ModelDir: k.core.Model().Dir, PromptTokens: b.Tokens})
		if err != nil {
			if stop := orchestrator.WorkerFailure(err); stop != nil {
				return gate2{}, chain.Outcome{}, stop
			}
			out.e2e = quant.E2ERaised(q.Format, "quant_e2e raised: "+k.core.Explain("quant_baseline", err))
		} else {
			out.e2e = quant.JudgeE2E(q.Format, &facts, cfg.NLayers)
			out.e2e.AgainstGate1(k.sections.weights)
		}
		return out, chain.Outcome{Status: verdict.Worst(b.Status, out.e2e.Status), Detail: "bf16: " + b.Summary + "; quantized: " + out.e2e.Summary}, nil
	}
	start := time.Now()
	args := orchestrator.BaselineRequest(k.core.Settings(), k.core.Model(), cfg, "")
	if err := k.core.PromptFits(ctx, args); err != nil {
		return gate2{}, chain.Outcome{}, err
	}
	if notRun == "" {
		args.Quant = &e2eArgs
	}
	res, logits, err := k.core.Py().Baseline(ctx, args)
	raised := ""
	if err != nil && args.Quant != nil && orchestrator.WorkerFailure(err) == nil {
		// Raised with the folder's tensors in: the bf16 baseline again alone, the raise is gate 2's.
		raised = "the baseline op raised once the folder's dequantized tensors were patched in: " + k.core.Explain("quant_baseline", err)
		args.Quant = nil
		start = time.Now()
		res, logits, err = k.core.Py().Baseline(ctx, args)
	}
	if err != nil {
		if stop := orchestrator.WorkerFailure(err); stop != nil {
			return gate2{}, chain.Outcome{}, stop
		}
		b := baseline.NewBaseline()
		b.Seconds = time.Since(start).Seconds()
		b.Fail(k.core.Explain("quant_baseline", err))
		return gate2{baseline: b}, chain.Outcome{Status: b.Status, Detail: b.Summary}, nil
	}
	b := baseline.FromRunner(&res, logits, cfg.VocabSize, res.SecondsLoad+res.SecondsPrefill, k.core.Settings().MaxPerplexityRatio)
	out := gate2{baseline: b}
	status, detail := b.Status, b.Summary
	switch {
	case notRun != "":
		out.e2e = quant.E2ENotRun(q.Format, notRun)
	case raised != "":
		out.e2e = quant.E2ERaised(q.Format, raised)
		status = verdict.Worst(status, out.e2e.Status)
	case res.Quant == nil:
		return out, chain.Outcome{}, fmt.Errorf("%w: op baseline was asked for quantized gate 2 (quant) and returned no quant facts", ops.ErrContract)
	default:
		out.e2e = quant.JudgeE2E(q.Format, res.Quant, cfg.NLayers)
		out.e2e.AgainstGate1(k.sections.weights)
		status = verdict.Worst(status, out.e2e.Status)
	}
	detail = "bf16: " + detail + "; quantized: " + out.e2e.Summary
	return out, chain.Outcome{Status: status, Detail: detail}, nil
}
