// Package modelrun is `phase0 run MODEL` for one model: the one place that
// says which route validates it. A MODEL the mlir-air tree's quantized
// folders name (an NPU bundle, or a reference under --name of such a
// folder) is every MODEL_CHOICES key that pairs it (run/quantkey); any
// other MODEL is the bf16 run (orchestrator.RunBF16).
package modelrun

import (
	"context"

	"phase0/gate/quantfolder"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/run/chain"
	"phase0/run/orchestrator"
	"phase0/run/quantkey"
)

// Run is all of Phase 0 for one model.
func Run(ctx context.Context, s *orchestrator.Settings, modelArg, version string) *report.Report {
	uses, err := quantfolder.Uses(s.LLMSDir, scaffold.ReservedNames, s.Name, modelArg)
	switch {
	case err != nil:
		return orchestrator.RunRoute(ctx, s, modelArg, version, func(*orchestrator.State) (unrouted, orchestrator.Key) { return unrouted{err}, nil },
			[]chain.Stage[unrouted]{chain.Check("route", routeStage)})
	case len(uses) > 0:
		return quantkey.Run(ctx, s, modelArg, version, uses)
	}
	return orchestrator.RunBF16(ctx, s, modelArg, version)
}

// unrouted is a run whose tree could not say what to validate: why.
type unrouted struct{ err error }

// routeStage reports why the tree could not say what to validate.
func routeStage(_ context.Context, u unrouted) (chain.Outcome, error) {
	return chain.Outcome{}, u.err
}
