package orchestrator

import (
	"errors"
	"fmt"
	"strings"

	"phase0/python/launch"
	"phase0/python/ops"
	"phase0/python/worker"
	"phase0/run/chain"
)

// ErrNoPython means no interpreter was configured for the Python stages.
var ErrNoPython = launch.ErrNoPython

// python is how this run's settings start its Python side.
func (s *Settings) python() launch.Target {
	return launch.Target{Python: s.Python, PyShimDir: s.PyShimDir, CacheDir: s.CacheDir, Timeout: s.Timeout, Log: s.Progress, Sessions: s.Sessions}
}

// opsClient runs the typed ops in a worker session of its own (or one
// Settings.Sessions lends); the caller closes it.
func (s *Settings) opsClient() *ops.Client {
	return s.python().Client(func(err error) error { return fmt.Errorf("%w: %w", chain.ErrInterrupted, err) })
}

// WorkerFailure sorts a worker error: could not evaluate (no interpreter, the
// child never started), interrupted (the caller's context ended), or nil when
// the error is the model's — an exception, a crash, a timeout — which a gate
// records as its FAIL.
func WorkerFailure(err error) error {
	var we *worker.Error
	switch {
	case errors.Is(err, ErrNoPython):
		return err
	case worker.MissingRequirement(err) != nil:
		return worker.MissingRequirement(err)
	case errors.As(err, &we) && we.Kind == worker.KindCancelled:
		return fmt.Errorf("%w: %w", chain.ErrInterrupted, err)
	case errors.As(err, &we) && we.Kind == worker.KindNotStarted:
		return err
	case errors.As(err, &we):
		return nil
	}
	return err
}

// reasons describes a worker error: the cause, then the traceback or the
// child's last output. Never a Go stack. Reports take only the first line
// (explain); the rest is for the run's log.
func reasons(err error) []string {
	var we *worker.Error
	if errors.As(err, &we) {
		return we.Reasons()
	}
	return []string{err.Error()}
}

// Explain is a worker error as one line for the report (a gate finding,
// the run's error): the cause. Its traceback, or the child's last output,
// goes to the run's log on stderr, under the stage's name, and the line
// says so.
func (st *state) Explain(stage string, err error) string {
	why := reasons(err)
	line := strings.Join(strings.Fields(why[0]), " ")
	if len(why) == 1 {
		return line
	}
	if p := st.in.s.Progress; p != nil {
		fmt.Fprintf(p, "phase0: %s: %s\n%s\n", stage, line, strings.Join(why[1:], "\n"))
		return line + " (full error on stderr)"
	}
	return line
}
