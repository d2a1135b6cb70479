package orchestrator

import (
	"context"
	"fmt"
	"os"
	"time"

	"phase0/model"
	"phase0/safetensors"
	"phase0/weights"
)

// timed runs one stage, records it on the report and prints its timing.
func (r *Report) timed(s *Settings, name string, fn func() (status, detail string)) {
	start := time.Now()
	status, detail := fn()
	st := Stage{Name: name, Status: status, Seconds: time.Since(start).Seconds(), Detail: detail}
	r.Stages = append(r.Stages, st)
	if s.Progress != nil {
		line := fmt.Sprintf("phase0: %-18s %-8s %7.2fs", name, status, st.Seconds)
		if detail != "" {
			line += "  " + detail
		}
		fmt.Fprintln(s.Progress, line)
	}
}

// fail marks the report as not evaluable (exit 2).
func (r *Report) fail(err error) *Report {
	r.Status = StatusError
	r.Error = err.Error()
	return r
}

// inspection is what the native stages hand on to later ones.
type inspection struct {
	ref      *resolvedModel
	analysis *model.Analysis
	inv      *safetensors.Inventory
}

// Inspect runs everything that needs no Python: resolve, config, architecture
// gate, inventory, weights gate, cross-check and (optionally) the NaN scan.
func Inspect(ctx context.Context, s *Settings, modelArg string, version string) *Report {
	r := NewReport("inspect", modelArg, version)
	r.inspect(ctx, s)
	r.finish()
	return r
}

func (r *Report) finish() {
	r.settle()
	r.Seconds = time.Since(r.Started).Seconds()
}

func (r *Report) inspect(ctx context.Context, s *Settings) *inspection {
	var ref *resolvedModel
	r.timed(s, "resolve", func() (string, string) {
		var err error
		ref, err = resolveModel(ctx, s, r.Model)
		if err != nil {
			r.fail(err)
			return StatusError, err.Error()
		}
		r.ModelID, r.ModelDir, r.Revision = ref.ID, ref.Dir, ref.Revision
		return StatusPass, ref.Dir
	})
	if r.Status == StatusError {
		return nil
	}
	fsys := os.DirFS(ref.Dir)

	var a *model.Analysis
	r.timed(s, "config", func() (string, string) {
		raw, err := model.ReadRaw(fsys)
		if err != nil {
			r.fail(fmt.Errorf("%s: %w", ref.Dir, err))
			return StatusError, err.Error()
		}
		a = model.Analyze(raw)
		r.Architecture = a.Architecture
		if a.Family != nil {
			r.Family = a.Family.Name()
		}
		r.Config = a.Config
		r.Defaulted = append(r.Defaulted, a.Defaulted...)
		r.Rejections = append(r.Rejections, a.Rejections...)
		r.Warnings = append(r.Warnings, a.Warnings...)
		if a.Rejected() {
			r.Status = StatusRejected
			return StatusRejected, fmt.Sprintf("%d reason(s)", len(a.Rejections))
		}
		return StatusPass, fmt.Sprintf("%s (%s)", a.Architecture, r.Family)
	})
	if r.Status == StatusError || r.Status == StatusRejected {
		return nil
	}

	insp := &inspection{ref: ref, analysis: a}
	r.Gates.Weights = weights.NewResult()
	r.Gates.ConfigConsistency = weights.NewConsistency()
	r.timed(s, "weights", func() (string, string) {
		inv, err := safetensors.Load(fsys)
		if err != nil {
			r.Gates.Weights.Fail(err)
			r.Gates.ConfigConsistency.Status = weights.StatusSkip
			return weights.StatusFail, err.Error()
		}
		insp.inv = inv
		res := weights.Check(a.Config, inv)
		r.Gates.Weights = res
		r.Gates.ConfigConsistency = weights.CrossCheck(a.Config, inv)
		return res.Status, fmt.Sprintf("%d tensors in %d file(s), %.1f MiB", res.Tensors, len(res.Files), float64(res.Bytes)/(1<<20))
	})
	if s.Scan && insp.inv != nil {
		r.timed(s, "scan", func() (string, string) { return r.scan(ctx, s, ref.Dir, insp.inv) })
	}
	return insp
}
