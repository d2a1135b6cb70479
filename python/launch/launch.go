// Package launch starts the Python side of a run: the interpreter it was
// given, phase0_shim (a working copy, or the copy built into the binary
// unpacked under phase0's cache and checked on every use), an isolated
// worker session on it or one lent by warm sessions, and the typed ops
// client over that session.
package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"phase0/internal/pyenv"
	"phase0/python/ops"
	"phase0/python/pyshim"
	"phase0/python/warm"
	"phase0/python/worker"
)

// ErrNoPython means no interpreter was configured for the Python stages:
// the one sentinel internal/pyenv also wraps when it finds none.
var ErrNoPython = pyenv.ErrNoPython

// Target is what a run's Python side is made of, from its settings.
type Target struct {
	Python    string // the interpreter: --python, PHASE0_PYTHON or make's venv
	PyShimDir string // a working copy of phase0_shim; "" for the built-in copy
	CacheDir  string // phase0's cache; "" for the user cache dir's phase0/
	Timeout   time.Duration
	Log       io.Writer      // the worker's stderr, the run's log
	Sessions  *warm.Sessions // lends a live worker when set (a list's runs, the Python API's calls, the tests)
}

// Interpreter is the absolute path of the configured interpreter, which
// must exist.
func (t Target) Interpreter() (string, error) {
	if t.Python == "" {
		return "", fmt.Errorf("%w: pass --python, set PHASE0_PYTHON, or run through make (it prepares a venv)", ErrNoPython)
	}
	abs, err := filepath.Abs(t.Python)
	if err != nil {
		return "", fmt.Errorf("python %s: %w", t.Python, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("%w: %s does not exist (make venv creates phase0's own)", ErrNoPython, abs)
	}
	return abs, nil
}

// Shim is a folder holding phase0_shim, and why the unpacked copy was
// unpacked again ("" when it was intact, or is a working copy): a working
// copy must hold the package; the built-in copy is unpacked once per
// content hash under the cache (pyshim.Unpacked).
func (t Target) Shim() (dir, repaired string, err error) {
	if t.PyShimDir != "" {
		if err := pyshim.CheckWorkingCopy(t.PyShimDir); err != nil {
			return "", "", err
		}
		return t.PyShimDir, "", nil
	}
	cache, err := t.Cache()
	if err != nil {
		return "", "", err
	}
	return pyshim.Unpacked(cache)
}

// Cache is phase0's cache folder, created if missing: the cache setting,
// else the user cache dir's phase0/.
func (t Target) Cache() (string, error) {
	dir := t.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache folder: set PHASE0_CACHE: %w", err)
		}
		dir = filepath.Join(base, "phase0")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating cache folder %s: %w", dir, err)
	}
	return dir, nil
}

// worker is what a session runs: the interpreter and the shim's folder.
func (t Target) worker() (python, shim string, err error) {
	if python, err = t.Interpreter(); err != nil {
		return "", "", err
	}
	if shim, _, err = t.Shim(); err != nil {
		return "", "", err
	}
	return python, shim, nil
}

// Start opens an isolated Python session on phase0_shim.ops.
func (t Target) Start(ctx context.Context) (*worker.Session, error) {
	py, shim, err := t.worker()
	if err != nil {
		return nil, err
	}
	return worker.Start(ctx, worker.Options{Python: py, ExtraPath: []string{shim}, Timeout: t.Timeout, Stderr: t.Log}, ops.Module)
}

// Client runs the typed ops in a worker session of its own, started by the
// first op, or borrowed from Sessions; the caller closes it. A loan cut
// short while waiting for a session (warm.ErrWaiting) goes through
// interrupted, which says what it means to the caller.
func (t Target) Client(interrupted func(error) error) *ops.Client {
	return ops.New(func(ctx context.Context) (ops.Session, error) {
		if t.Sessions != nil {
			py, shim, err := t.worker()
			if err != nil {
				return nil, err
			}
			l, err := t.Sessions.Borrow(ctx, warm.Loan{Python: py, Shim: shim, Log: t.Log, Timeout: t.Timeout})
			if errors.Is(err, warm.ErrWaiting) {
				return nil, interrupted(err)
			}
			return l, err
		}
		sess, err := t.Start(ctx)
		if err != nil {
			return nil, err
		}
		return sess, nil
	})
}
