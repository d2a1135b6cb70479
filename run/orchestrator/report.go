// Package orchestrator runs the Phase 0 commands as chains of named stages
// over one state, and builds the report once, at the end, from that state.
package orchestrator

import (
	"errors"
	"time"

	"phase0/gate/verdict"
	"phase0/output/report"
	"phase0/read/model"
	"phase0/run/chain"
	"phase0/run/errkind"
)

// Report is the one JSON object phase0 prints with --json: package report
// defines and renders it, the orchestrator builds it. The alias keeps the
// commands' orchestrator.Report (cmd/internal/cli, cmd/phase0bench).
type Report = report.Report

// ExitCode maps a report to the process exit code: 0 pass, 1 a gate failed
// or the model was rejected, 2 could not evaluate, 130 interrupted.
func ExitCode(r *report.Report) int {
	if r.Interrupted {
		return verdict.Interrupted
	}
	return r.Status.ExitCode()
}

// ErrorReport is the report of an invocation that never reached a model
// (bad flags or settings): status ERROR, so --json still prints one object.
func ErrorReport(command, modelArg, version string, err error) *report.Report {
	r := &report.Report{Tool: "phase0", Version: version, Command: command, Model: modelArg, Status: verdict.Error,
		Defaulted: []model.Defaulted{}, Rejections: []model.Rejection{}, Warnings: []string{},
		Stages: []report.Stage{}, Started: time.Now().UTC().Truncate(time.Second)}
	setError(r, err)
	return r
}

// setError says in r why the run could not be evaluated: err's text, its
// kind and whether it was an interrupt.
func setError(r *report.Report, err error) {
	r.Error, r.ErrorKind, r.Interrupted = err.Error(), errkind.Of(err), errors.Is(err, chain.ErrInterrupted)
}
