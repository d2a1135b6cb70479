// Package errkind names why a run could not be evaluated: the report's
// error_kind, read from the error's chain (sentinel errors and the worker's
// Kind), never from its text (docs/reports.md#error-kinds).
package errkind

import (
	"errors"

	"phase0/gate/reference"
	"phase0/internal/errmark"
	"phase0/internal/pyenv"
	"phase0/internal/wslock"
	"phase0/output/record"
	"phase0/output/report"
	"phase0/python/bridge"
	"phase0/python/worker"
	"phase0/read/model"
	"phase0/run/chain"
	"phase0/run/resolve"
	"phase0/run/settings"
)

// errUsage is in the chain of an invocation's error (bad flags, settings,
// arguments: nothing ran), marked by Usage.
var errUsage = errors.New("usage error")

// Usage marks err as the invocation's (errUsage, errors.Is) with msg as its
// text: the command line cuts a long message, and keeps the chain.
func Usage(msg string, err error) error { return errmark.With(errUsage, msg, err) }

// Of is why err stopped a run, read from its chain (sentinel errors
// and *worker.Error's Kind), never from its text: the report's error_kind
// (docs/reports.md#error-kinds). The first match decides, so an interrupt
// that ended a download is interrupted, not hub.
func Of(err error) report.ErrorKind {
	var we *worker.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, chain.ErrInterrupted), errors.As(err, &we) && we.Kind == worker.KindCancelled:
		return report.ErrorInterrupted
	case errors.Is(err, errUsage), errors.Is(err, settings.ErrValue), errors.Is(err, settings.ErrFile):
		return report.ErrorUsage
	case errors.Is(err, resolve.ErrNoModel):
		return report.ErrorModelNotFound
	case errors.Is(err, resolve.ErrHub):
		return report.ErrorHub
	case errors.Is(err, model.ErrConfig):
		return report.ErrorConfigUnreadable
	case errors.Is(err, pyenv.ErrNoPython), errors.Is(err, bridge.ErrUnsupportedPython), errors.Is(err, worker.ErrMissingRequirement):
		return report.ErrorPythonEnvironment
	case errors.Is(err, wslock.ErrHeld):
		return report.ErrorWorkspaceLocked
	case errors.Is(err, record.ErrRecord):
		return report.ErrorRecord
	case errors.Is(err, reference.ErrWrite):
		return report.ErrorReference
	case errors.As(err, &we):
		return workerKinds[we.Kind]
	}
	return report.ErrorOther
}

// workerKinds are the error kinds of a worker error that reached the
// report (the ones no gate judged as its FAIL).
var workerKinds = map[worker.Kind]report.ErrorKind{worker.KindNotStarted: report.ErrorWorkerNotStarted,
	worker.KindCrashed: report.ErrorWorkerCrashed, worker.KindTimedOut: report.ErrorWorkerTimedOut, worker.KindRaised: report.ErrorWorkerRaised}
