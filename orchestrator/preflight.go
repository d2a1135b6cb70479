package orchestrator

import (
	"context"
	"fmt"

	"phase0/safetensors"
	"phase0/verdict"
)

// torchOverhead is what torch + transformers take before any weight is loaded.
const torchOverhead = 1 << 30

// referenceBytes estimates the peak memory of the bf16 reference: every
// parameter as bf16, 20% for activations, allocator slack and the tokenizer,
// plus the runtime itself.
func referenceBytes(inv *safetensors.Inventory) (params, need int64) {
	for _, t := range inv.Tensors() {
		if size, ok := safetensors.DTypeSize(t.DType); ok && size > 0 {
			params += (t.End - t.Begin) / size
		}
	}
	return params, params*2*12/10 + torchOverhead
}

// pythonReady says whether the Python stages apply: a checkpoint that failed
// the native weights gate is not loaded, because transformers would fill
// missing tensors with random values.
func pythonReady(st *state) (bool, string) {
	if st.weights == nil || st.weights.Status != verdict.Pass {
		return false, "the checkpoint failed the native weights gate; transformers would fill missing tensors with random values"
	}
	if st.baseline != nil {
		return false, "the memory preflight failed"
	}
	return true, ""
}

// preflightStage refuses, politely, a model the machine cannot hold in bf16
// (or warns with --force); the refusal is recorded as the baseline's FAIL.
func preflightStage(_ context.Context, st *state) (verdict.Status, string, error) {
	params, need := referenceBytes(st.inv)
	avail := memAvailable()
	detail := fmt.Sprintf("%.2f B parameters need ~%.1f GiB for the bf16 reference; %.1f GiB available", float64(params)/1e9, gib(need), gib(avail))
	if avail == 0 || need <= avail {
		return verdict.Pass, detail, nil
	}
	msg := "not enough memory for the bf16 reference: " + detail
	if st.s.Force {
		st.warnings = append(st.warnings, msg+" (continuing because of --force)")
		return verdict.Warn, detail, nil
	}
	st.baseline = newBaseline()
	st.baseline.fail(msg + "; free memory, use a bigger machine, or pass --force to try anyway")
	return verdict.Fail, detail, nil
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }
