package quantkey

import (
	"context"

	"phase0/output/record"
	"phase0/output/report"
	"phase0/run/chain"
	"phase0/run/orchestrator"
	"phase0/run/reuse"
)

// quantReuseStage reuses the key's recorded verdict when none of its inputs
// changed (reuse.QuantInputs besides a bf16 run's), as reuse does for a
// bf16 run: under the key's lock, before any Python runs. Otherwise it
// says why not (SKIPPED) and the chain runs in full.
func quantReuseStage(_ context.Context, k *keyState) (orchestrator.Reuse, chain.Outcome, error) {
	rec, why, stamp := reusable(k)
	return orchestrator.ReuseOutcome(stamp, rec, why)
}

// reusable returns the key's recorded report when it can be reused, else
// why not, and what it stamped (compared again when the run records).
func reusable(k *keyState) (rec *report.Report, why string, stamp *reuse.Inputs) {
	s, dir := k.core.Settings(), k.facts.folder.Dir
	cur, err := k.core.CurrentInputs(k.core.Model(), dir)
	if err != nil {
		return nil, err.Error(), nil
	}
	if s.Fresh {
		return nil, "--fresh", cur
	}
	if s.Refresh {
		return nil, "--refresh", cur
	}
	reports, err := s.Places().Reports(dir, k.core.RecordID())
	if err != nil {
		return nil, err.Error(), cur
	}
	// Under the key's lock: a record commit a kill cut short is finished,
	// and what it left is removed, before the record is read.
	if _, err := record.Recover(reports); err != nil {
		return nil, err.Error(), cur
	}
	recorded, why := reuse.Recorded(reports)
	if why != "" {
		return nil, why, cur
	}
	rec, why = reuse.Decide(recorded, cur)
	return rec, why, cur
}

// bf16Record is the reference's own bf16 run's recorded report when it can
// be reused (a PASS whose inputs are unchanged: orchestrator.Reusable
// decides, for the run `phase0 run <reference> --llms-dir T` would be),
// else why not.
func bf16Record(k *keyState) (*report.Report, string) {
	s := *k.core.Settings()
	s.Name = "" // the reference's own run names no quantized folder
	rec, why, _ := orchestrator.Reusable(&s, k.in.use.Reference, k.in.version)
	return rec, why
}
