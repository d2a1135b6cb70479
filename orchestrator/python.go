package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"phase0/internal/pyenv"
	"phase0/ops"
	"phase0/warm"
	"phase0/worker"
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
	case missingDependency(err) != nil:
		return missingDependency(err)
	case errors.As(err, &we) && we.Kind == worker.KindCancelled:
		return fmt.Errorf("%w: %w", errInterrupted, err)
	case errors.As(err, &we) && we.Kind == worker.KindNotStarted:
		return err
	case errors.As(err, &we):
		return nil
	}
	return err
}

// requirements are the modules phase0's Python side imports (requirements.txt),
// by import name, with the name pip installs them by.
var requirements = map[string]string{"torch": "torch", "transformers": "transformers", "safetensors": "safetensors",
	"tokenizers": "tokenizers", "numpy": "numpy", "ml_dtypes": "ml_dtypes", "huggingface_hub": "huggingface_hub"}

// noModule reads the module name out of Python's "No module named 'x.y'".
var noModule = regexp.MustCompile(`No module named '([A-Za-z0-9_.]+)'`)

// missingDependency is the could-not-evaluate error (exit 2) for an op that
// raised ModuleNotFoundError for one of phase0's own requirements: the
// interpreter lacks a package, which says nothing about the model, so no
// gate may FAIL on it (and no record is replaced). nil for anything else;
// a module the workspace's own code imports stays that code's failure.
func missingDependency(err error) error {
	var we *worker.Error
	if !errors.As(err, &we) || we.Kind != worker.KindRaised || we.Py == nil || we.Py.Type != "ModuleNotFoundError" {
		return nil
	}
	m := noModule.FindStringSubmatch(we.Py.Message)
	if m == nil {
		return nil
	}
	top, _, _ := strings.Cut(m[1], ".")
	pip, ok := requirements[top]
	if !ok {
		return nil
	}
	return fmt.Errorf("the Python environment lacks %s, which phase0 needs (%s raised ModuleNotFoundError: %s): install it with `<python> -m pip install %s` into the interpreter phase0 runs (--python or PHASE0_PYTHON), or let `make venv` prepare one with all of requirements.txt",
		top, we.Op, we.Py.Message, pip)
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
