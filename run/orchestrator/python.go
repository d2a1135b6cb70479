package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"phase0/internal/pyenv"
	"phase0/python/ops"
	"phase0/python/warm"
	"phase0/python/worker"
)

// ErrNoPython means no interpreter was configured for the Python stages:
// the one sentinel internal/pyenv also wraps when it finds none.
var ErrNoPython = pyenv.ErrNoPython

func (s *Settings) python() (string, error) {
	if s.Python == "" {
		return "", fmt.Errorf("%w: pass --python, set PHASE0_PYTHON, or run through make (it prepares a venv)", ErrNoPython)
	}
	abs, err := filepath.Abs(s.Python)
	if err != nil {
		return "", fmt.Errorf("python %s: %w", s.Python, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("%w: %s does not exist (make venv creates phase0's own)", ErrNoPython, abs)
	}
	return abs, nil
}

// workerTarget is what a worker session runs: the interpreter and the
// folder holding phase0_shim.
func (s *Settings) workerTarget() (python, shim string, err error) {
	if python, err = s.python(); err != nil {
		return "", "", err
	}
	if shim, err = s.shimDir(); err != nil {
		return "", "", err
	}
	return python, shim, nil
}

// startWorker opens an isolated Python session on phase0_shim.ops.
func (s *Settings) startWorker(ctx context.Context) (*worker.Session, error) {
	py, shim, err := s.workerTarget()
	if err != nil {
		return nil, err
	}
	return worker.Start(ctx, worker.Options{Python: py, ExtraPath: []string{shim}, Timeout: s.Timeout, Stderr: s.Progress}, ops.Module)
}

// opsClient runs the typed ops in a worker session of its own, started by
// the first op (or borrowed from Settings.Sessions); the caller closes it.
func (s *Settings) opsClient() *ops.Client {
	return ops.New(func(ctx context.Context) (ops.Session, error) {
		if s.Sessions != nil {
			py, shim, err := s.workerTarget()
			if err != nil {
				return nil, err
			}
			l, err := s.Sessions.Borrow(ctx, py, shim, s.Progress)
			if errors.Is(err, warm.ErrWaiting) {
				return nil, fmt.Errorf("%w: %w", errInterrupted, err)
			}
			return l, err
		}
		sess, err := s.startWorker(ctx)
		if err != nil {
			return nil, err
		}
		return sess, nil
	})
}

// workerFailure sorts a worker error: could not evaluate (no interpreter, the
// child never started), interrupted (the caller's context ended), or nil when
// the error is the model's — an exception, a crash, a timeout — which a gate
// records as its FAIL.
func workerFailure(err error) error {
	var we *worker.Error
	switch {
	case errors.Is(err, ErrNoPython):
		return err
	case worker.MissingRequirement(err) != nil:
		return worker.MissingRequirement(err)
	case errors.As(err, &we) && we.Kind == worker.KindCancelled:
		return fmt.Errorf("%w: %w", errInterrupted, err)
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

// explain is a worker error as one line for the report (a gate finding,
// the run's error): the cause. Its traceback, or the child's last output,
// goes to the run's log on stderr, under the stage's name, and the line
// says so.
func (st *state) explain(stage string, err error) string {
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
