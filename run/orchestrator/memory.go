package orchestrator

import (
	"context"
	"fmt"

	"phase0/gate/baseline"
	"phase0/gate/preflight"
	"phase0/gate/verdict"
)

// PythonReady says whether the Python stages apply: a checkpoint that failed
// the native weights gate is not loaded, because transformers would fill
// missing tensors with random values.
func PythonReady(st *state) (bool, string) {
	// A deployed family's reference skips the native gate (its layout is
	// not the pipeline's): quantized gate 1 reads every tensor of it.
	if g := st.gate1(); g == nil || (g.Status != verdict.Pass && g.Status != verdict.Skip) {
		return false, "the checkpoint failed the native weights gate; transformers would fill missing tensors with random values"
	}
	if m := st.facts.memory; m != nil && m.refusal != nil {
		return false, "the memory preflight failed"
	}
	return true, ""
}

// memoryStage refuses, politely, a model the machine cannot hold in bf16
// (or warns with --force); the refusal stands as the baseline's FAIL.
func memoryStage(_ context.Context, st *state) (*memoryVerdict, outcome, error) {
	m := &memoryVerdict{need: st.memoryNeed()}
	avail := memAvailable()
	detail := fmt.Sprintf("%s; %.1f GiB available", m.need.Describe(), gib(avail))
	if avail == 0 || m.need.Peak <= avail {
		return m, pass(detail), nil
	}
	msg := "not enough memory for the bf16 model: " + detail
	if st.in.s.Force {
		return m, outcome{Status: verdict.Warn, Detail: detail, Warnings: []string{msg + " (continuing because of --force)"}}, nil
	}
	m.refusal = baseline.NewBaseline()
	m.refusal.Fail(msg + "; free memory, use a bigger machine, or pass --force to try anyway")
	return m, outcome{Status: verdict.Fail, Detail: detail}, nil
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }

// memoryNeed is the run's memory estimate, which the memory stage and the
// machine check state: a quantized key's stages included.
func (st *state) memoryNeed() preflight.Memory {
	if st.key == nil {
		return preflight.CheckpointMemory(st.inv())
	}
	family, _ := st.facts.analysis.DeployedFamily()
	return preflight.QuantizedMemory(st.inv(), family)
}
