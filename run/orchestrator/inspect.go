package orchestrator

import (
	"context"
	"fmt"
	"os"

	"phase0/gate/config"
	"phase0/gate/preflight"
	"phase0/gate/verdict"
	"phase0/gate/weights"
	"phase0/internal/gcpause"
	"phase0/output/report"
	"phase0/read/model"
	"phase0/read/safetensors"
	"phase0/run/chain"
)

// weightsGCBudget bounds the heap growth while the weights stage holds the
// collector off (about 30 MB for 73,731 tensors).
const weightsGCBudget = 512 << 20

// Inspect runs everything that needs no Python. A hub model that is not in
// the HF cache is inspected from its metadata alone (no weight byte fetched).
func Inspect(ctx context.Context, s *Settings, modelArg, version string) *report.Report {
	local := *s
	local.HeadersOnly = true
	return runChain(ctx, &local, "inspect", modelArg, version, withoutSkippedScan(inspectStages, &local))
}

// InspectSized is Inspect that also returns the checkpoint's sizes and the
// estimated peak memory of the Python stages (nil when no headers were
// read): what a list's triage row shows.
func InspectSized(ctx context.Context, s *Settings, modelArg, version string) (*report.Report, *preflight.Memory) {
	local := *s
	var st state
	r := runChain(ctx, &local, "inspect", modelArg, version, inspectFor(&local, &st))
	if inv := st.inv(); inv != nil {
		m := preflight.CheckpointMemory(inv)
		return r, &m
	}
	return r, nil
}

// inspectFor is the inspect chain with a last step that hands the state out,
// so InspectSized can read the inventory.
func inspectFor(s *Settings, out *state) []stage {
	s.HeadersOnly = true
	return append(withoutSkippedScan(inspectStages, s), chain.Check("triage", func(_ context.Context, st *state) (outcome, error) {
		*out = *st
		return pass(""), nil
	}))
}

// withoutSkippedScan drops the scan stage when it was not asked for, so
// reports list only stages that mean something.
func withoutSkippedScan(stages []stage, s *Settings) []stage {
	if s.Scan {
		return stages
	}
	out := make([]stage, 0, len(stages))
	for _, sg := range stages {
		if sg.Name() != "scan" {
			out = append(out, sg)
		}
	}
	return out
}

// resolveStage finds the model's folder, or for a hub model not in the HF
// cache (inspect only) its metadata.
func resolveStage(ctx context.Context, st *state) (*resolvedModel, outcome, error) {
	s := st.in.s
	ref, err := resolveModel(ctx, s, st.in.arg)
	if err != nil {
		return nil, outcome{}, err
	}
	if ref.Remote {
		if s.Scan {
			// The model was resolved: the report names it (the refusal is
			// the error).
			return ref, outcome{}, fmt.Errorf("--scan reads every tensor byte, but %s is not in the HF cache and was inspected from its headers only: download it first (phase0 baseline %s) or drop --scan", ref.ID, ref.ID)
		}
		return ref, pass(ref.Dir + " (headers only)"), nil
	}
	local := *ref
	local.FS = os.DirFS(ref.Dir)
	return &local, pass(ref.Dir), nil
}

// configStage reads config.json and runs the architecture gate.
func configStage(_ context.Context, st *state) (*model.Analysis, outcome, error) {
	src := st.facts.model
	raw, err := model.ReadRaw(src.FS)
	if err != nil {
		return nil, outcome{}, fmt.Errorf("%s: %w", src.Dir, err)
	}
	a := model.Analyze(raw)
	if st.key != nil {
		// The reference of a quantized deployment: a deployed family
		// (Gemma 3, Phi-3) is read for that path, not brought up.
		a = model.AnalyzeDeployed(raw)
	}
	if a.Rejected() {
		return a, outcome{Status: verdict.Rejected, Detail: fmt.Sprintf("%d reason(s)", len(a.Rejections))}, nil
	}
	return a, pass(fmt.Sprintf("%s (%s)", a.Architecture, a.Family.Name())), nil
}

// weightsResult is the weights stage's: the inventory (a fact), gate 1 from
// the headers and gate 3's cross-check of config.json against the shapes.
type weightsResult struct {
	checkpoint *checkpoint
	gate1      *weights.Result
	crossCheck *config.Consistency
}

// weightsStage reads the safetensors headers into the inventory and judges
// gate 1 and the config-vs-shapes part of gate 3 over it.
func weightsStage(_ context.Context, st *state) (weightsResult, outcome, error) {
	// The inventory and both gates over it allocate what stays live until
	// the report is written: a collection in between would only mark it.
	defer gcpause.Hold(weightsGCBudget)()
	src := st.facts.model
	inv, err := safetensors.Load(src.FS)
	if err != nil {
		r := weightsResult{gate1: weights.NewResult(), crossCheck: config.New()}
		r.gate1.Fail(err)
		r.crossCheck.Skip("the checkpoint could not be read")
		return r, outcome{Status: verdict.Fail, Detail: err.Error()}, nil
	}
	r := weightsResult{checkpoint: &checkpoint{inv: inv}}
	if d := st.facts.analysis.Deployed; d != nil {
		return deployedWeights(r, inv.Len(), st.facts.analysis.Family.Title(), d.Folder)
	}
	// Checkpoint-only architecture rules go first, so a model the NPU cannot
	// run is rejected with its reason rather than failing gate 1 on tensors.
	if rej := model.TensorRejections(inv.AllNames()); len(rej) > 0 {
		r.checkpoint.rejections = rej
		return r, outcome{Status: verdict.Rejected, Detail: fmt.Sprintf("%d reason(s)", len(rej))}, nil
	}
	cfg := st.facts.analysis.Config
	data := src.FS
	if src.Remote {
		data = nil // headers only: no tensor bytes to compare
	}
	// Both only read the inventory: on a deep checkpoint each walks tens of
	// thousands of names, so they run side by side.
	crossChecked := make(chan struct{})
	go func() {
		defer close(crossChecked)
		r.crossCheck = config.CrossCheck(cfg, inv, data)
	}()
	r.gate1 = weights.Check(cfg, inv)
	<-crossChecked
	detail := fmt.Sprintf("%d tensors in %d file(s), %.1f MiB", r.gate1.Tensors, len(r.gate1.Files), float64(r.gate1.Bytes)/(1<<20))
	return r, outcome{Status: verdict.Worst(r.gate1.Status, r.crossCheck.Status), Detail: detail}, nil
}

// deployedWeights is the weights stage of a deployed family's reference
// (Gemma 3's multimodal checkpoint, Phi-3's fused projections): its bf16
// layout is not the pipeline's, so gate 1 and the cross-check of the
// pipeline's tensor set do not apply; quantized gate 1 reads every text
// tensor of it through the family's conventions.
func deployedWeights(r weightsResult, tensors int, family, folder string) (weightsResult, outcome, error) {
	why := fmt.Sprintf("%s reference of %s: its %d tensors are judged by quantized gate 1 through the family's conventions, not against the bf16 pipeline's tensor set", family, folder, tensors)
	r.gate1 = weights.NewResult()
	r.gate1.Tensors = tensors
	r.gate1.Status, r.gate1.Summary = verdict.Skip, why
	r.crossCheck = config.New()
	r.crossCheck.Skip(why)
	return r, outcome{Status: verdict.Skip, Detail: why}, nil
}
