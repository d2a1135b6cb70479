package report

// ErrorKind says why a run could not be evaluated (status ERROR, exit 2 or
// 130), as one of a closed set of snake_case words a program can switch on
// instead of reading the error's text (docs/reports.md#error-kinds). The
// package run/errkind decides it from the error's chain; a PASS, FAIL or REJECTED
// report has none.
type ErrorKind string

// The error kinds.
const (
	ErrorUsage             ErrorKind = "usage"              // bad flags, settings, options or settings file: nothing ran
	ErrorModelNotFound     ErrorKind = "model_not_found"    // MODEL names no folder and is no hub id
	ErrorHub               ErrorKind = "hub"                // a hub id not in the cache and not downloadable (absent, gated, offline, unreachable)
	ErrorConfigUnreadable  ErrorKind = "config_unreadable"  // config.json is missing or not JSON phase0 can read
	ErrorPythonEnvironment ErrorKind = "python_environment" // no usable interpreter, or it lacks one of phase0's packages
	ErrorWorkerNotStarted  ErrorKind = "worker_not_started" // the worker child, or Python in it, never came up
	ErrorWorkerCrashed     ErrorKind = "worker_crashed"     // the worker child died (a signal, an exit, a broken protocol)
	ErrorWorkerTimedOut    ErrorKind = "worker_timed_out"   // the timeout setting passed; the worker was killed
	ErrorWorkerRaised      ErrorKind = "worker_raised"      // an op raised where no gate judges the exception
	ErrorWorkspaceLocked   ErrorKind = "workspace_locked"   // another phase0 run holds the workspace
	ErrorRecord            ErrorKind = "record_failed"      // the record could not be written (a full disk, a foreign report.json)
	ErrorReference         ErrorKind = "reference_failed"   // the reference could not be written (a full disk, a foreign reference.json)
	ErrorInterrupted       ErrorKind = "interrupted"        // SIGINT/SIGTERM/SIGHUP or the caller's cancel (exit 130)
	ErrorOther             ErrorKind = "other"              // any other reason
)

// ErrorKinds lists every kind, in the order docs/reports.md gives them.
var ErrorKinds = []ErrorKind{ErrorUsage, ErrorModelNotFound, ErrorHub, ErrorConfigUnreadable, ErrorPythonEnvironment,
	ErrorWorkerNotStarted, ErrorWorkerCrashed, ErrorWorkerTimedOut, ErrorWorkerRaised, ErrorWorkspaceLocked, ErrorRecord,
	ErrorReference, ErrorInterrupted, ErrorOther}
