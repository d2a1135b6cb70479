package orchestrator

import (
	"fmt"

	"phase0/safetensors"
	"phase0/weights"
)

// torchOverhead is what torch + transformers take before any weight is loaded.
const torchOverhead = 1 << 30

// referenceBytes estimates the peak memory of the bf16 reference: every
// parameter as bf16, 20% for activations, allocator slack and the tokenizer,
// plus the runtime itself.
func referenceBytes(inv *safetensors.Inventory) (params, need int64) {
	for _, t := range inv.Tensors {
		if size, ok := safetensors.DTypeSize(t.DType); ok && size > 0 {
			params += (t.End - t.Begin) / size
		}
	}
	return params, params*2*12/10 + torchOverhead
}

// preflight refuses, politely, a model the machine cannot hold in bf16 (or
// warns with --force). It reports false when the run must stop.
func (r *Report) preflight(s *Settings, insp *inspection) bool {
	if !s.MemoryCheck || insp.inv == nil {
		return true
	}
	ok := true
	r.timed(s, "preflight", func() (string, string) {
		params, need := referenceBytes(insp.inv)
		avail := memAvailable()
		detail := fmt.Sprintf("%.2f B parameters need ~%.1f GiB for the bf16 reference; %.1f GiB available", float64(params)/1e9, gib(need), gib(avail))
		if avail == 0 || need <= avail {
			return StatusPass, detail
		}
		msg := fmt.Sprintf("not enough memory for the bf16 reference: %s", detail)
		if s.Force {
			r.Warnings = append(r.Warnings, msg+" (continuing because of --force)")
			return "WARN", detail
		}
		r.Gates.HFBaseline = newBaseline()
		r.Gates.HFBaseline.Reasons = append(r.Gates.HFBaseline.Reasons, msg+"; free memory, use a bigger machine, or pass --force to try anyway")
		ok = false
		return weights.StatusFail, detail
	})
	return ok
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }
