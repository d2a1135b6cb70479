package errkind

import (
	"errors"
	"fmt"
	"testing"

	"phase0/internal/pyenv"
	"phase0/output/record"
	"phase0/output/report"
	"phase0/python/worker"
	"phase0/run/chain"
	"phase0/run/resolve"
	"phase0/run/settings"
)

// TestErrorKindReadsTheChain: the kind comes from the wrapped sentinels and
// the worker's Kind, the first rule deciding (an interrupt that cut a
// download short is interrupted, not hub), whatever the message says.
func TestErrorKindReadsTheChain(t *testing.T) {
	crashed := &worker.Error{Op: "baseline", Kind: worker.KindCrashed}
	for _, tc := range []struct {
		err  error
		want report.ErrorKind
	}{
		{nil, ""},
		{fmt.Errorf("%w: no such folder /x", resolve.ErrNoModel), report.ErrorModelNotFound},
		{fmt.Errorf("%w: downloading org/m: %w", resolve.ErrHub, crashed), report.ErrorHub},
		{fmt.Errorf("%w in resolve: %w", chain.ErrInterrupted, fmt.Errorf("%w: %w", resolve.ErrHub, crashed)), report.ErrorInterrupted},
		{&worker.Error{Op: "baseline", Kind: worker.KindCancelled}, report.ErrorInterrupted},
		{fmt.Errorf("--workers: %w", settings.ErrValue), report.ErrorUsage},
		{Usage("model not found: a message that says otherwise", errors.New("cut")), report.ErrorUsage},
		{fmt.Errorf("%w: pass --python", pyenv.ErrNoPython), report.ErrorPythonEnvironment},
		{fmt.Errorf("python_weights: %w", crashed), report.ErrorWorkerCrashed},
		{&worker.Error{Op: "loader_facts", Kind: worker.KindTimedOut}, report.ErrorWorkerTimedOut},
		{&worker.Error{Op: "loader_facts", Kind: worker.KindNotStarted}, report.ErrorWorkerNotStarted},
		{&worker.Error{Op: "loader_facts", Kind: worker.KindRaised}, report.ErrorWorkerRaised},
		{fmt.Errorf("recording: %w", record.ErrRecord), report.ErrorRecord},
		{errors.New("model not found"), report.ErrorOther},
	} {
		if got := Of(tc.err); got != tc.want {
			t.Errorf("Of(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
