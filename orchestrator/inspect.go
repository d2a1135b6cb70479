package orchestrator

import (
	"context"
	"fmt"
	"os"

	"phase0/configgate"
	"phase0/internal/gcpause"
	"phase0/model"
	"phase0/report"
	"phase0/safetensors"
	"phase0/verdict"
	"phase0/weights"
)

// weightsGCBudget bounds the heap growth while the weights stage holds the
// collector off (about 30 MB for 73,731 tensors).
const weightsGCBudget = 512 << 20

// inspectStages need no Python: resolve, config and architecture gate,
// inventory with gate 1 and the config-vs-shapes cross-check, optional scan.
var inspectStages = []stage{
	{name: "resolve", run: resolveStage},
	{name: "config", run: configStage},
	{name: "weights", run: weightsStage},
	// Listed only when --scan is given (withoutSkippedScan).
	{name: "scan", when: func(st *state) (bool, string) { return st.inv != nil, "no inventory to scan" }, run: scanStage},
}

// Inspect runs everything that needs no Python. A hub model that is not in
// the HF cache is inspected from its metadata alone (no weight byte fetched).
func Inspect(ctx context.Context, s *Settings, modelArg, version string) *report.Report {
	local := *s
	local.HeadersOnly = true
	return runChain(ctx, &local, "inspect", modelArg, version, withoutSkippedScan(inspectStages, &local))
}

// withoutSkippedScan drops the scan stage when it was not asked for, so
// reports list only stages that mean something.
func withoutSkippedScan(stages []stage, s *Settings) []stage {
	if s.Scan {
		return stages
	}
	out := make([]stage, 0, len(stages))
	for _, sg := range stages {
		if sg.name != "scan" {
			out = append(out, sg)
		}
	}
	return out
}

func resolveStage(ctx context.Context, st *state) (verdict.Status, string, error) {
	ref, err := resolveModel(ctx, st.s, st.arg)
	if err != nil {
		return "", "", err
	}
	st.ref, st.fsys = ref, os.DirFS(ref.Dir)
	if ref.Remote {
		st.fsys = ref.FS
		if st.s.Scan {
			return "", "", fmt.Errorf("--scan reads every tensor byte, but %s is not in the HF cache and was inspected from its headers only: download it first (phase0 baseline %s) or drop --scan", ref.ID, ref.ID)
		}
		return verdict.Pass, ref.Dir + " (headers only)", nil
	}
	return verdict.Pass, ref.Dir, nil
}

func configStage(_ context.Context, st *state) (verdict.Status, string, error) {
	raw, err := model.ReadRaw(st.fsys)
	if err != nil {
		return "", "", fmt.Errorf("%s: %w", st.ref.Dir, err)
	}
	a := model.Analyze(raw)
	st.analysis = a
	if a.Rejected() {
		return verdict.Rejected, fmt.Sprintf("%d reason(s)", len(a.Rejections)), nil
	}
	return verdict.Pass, fmt.Sprintf("%s (%s)", a.Architecture, a.Family.Name()), nil
}

func weightsStage(_ context.Context, st *state) (verdict.Status, string, error) {
	// The inventory and both gates over it allocate what stays live until
	// the report is written: a collection in between would only mark it.
	defer gcpause.Hold(weightsGCBudget)()
	inv, err := safetensors.Load(st.fsys)
	if err != nil {
		st.weights = weights.NewResult()
		st.weights.Fail(err)
		st.consistency = configgate.New()
		st.consistency.Skip("the checkpoint could not be read")
		return verdict.Fail, err.Error(), nil
	}
	st.inv = inv
	// Checkpoint-only architecture rules go first, so a model the NPU cannot
	// run is rejected with its reason rather than failing gate 1 on tensors.
	if rej := model.TensorRejections(inv.AllNames()); len(rej) > 0 {
		st.analysis.Rejections = append(st.analysis.Rejections, rej...)
		return verdict.Rejected, fmt.Sprintf("%d reason(s)", len(rej)), nil
	}
	cfg := st.analysis.Config
	data := st.fsys
	if st.ref.Remote {
		data = nil // headers only: no tensor bytes to compare
	}
	// Both only read the inventory: on a deep checkpoint each walks tens of
	// thousands of names, so they run side by side.
	crossChecked := make(chan struct{})
	go func() {
		defer close(crossChecked)
		st.consistency = configgate.CrossCheck(cfg, inv, data)
	}()
	st.weights = weights.Check(cfg, inv)
	<-crossChecked
	detail := fmt.Sprintf("%d tensors in %d file(s), %.1f MiB", st.weights.Tensors, len(st.weights.Files), float64(st.weights.Bytes)/(1<<20))
	return verdict.Worst(st.weights.Status, st.consistency.Status), detail, nil
}
