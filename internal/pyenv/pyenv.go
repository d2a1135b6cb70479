// Package pyenv decides which Python phase0 runs: the one the user names,
// else the venv `make` built this binary for. Precedence, highest first:
//
//  1. the python setting (--python, or the layers below it: the command line
//     takes it when set and asks DefaultPython otherwise),
//  2. $PHASE0_PYTHON,
//  3. make's venv, recorded in the binary at build time
//     (go build -ldflags "-X phase0/internal/pyenv.makeVenv=DIR").
//
// It only locates the interpreter; whether phase0 can embed it is decided by
// bridge.Inspect.
package pyenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// EnvPython names the environment variable that overrides make's venv.
const EnvPython = "PHASE0_PYTHON"

// installedStamp is the file make writes into a venv once pip has finished.
const installedStamp = ".phase0-installed"

// makeVenv is set by the Makefile's build target; empty in a plain go build.
var makeVenv string

// ErrNoPython is wrapped when no python was named and make's venv is not
// there to fall back on.
var ErrNoPython = errors.New("no Python interpreter configured")

// DefaultPython returns the python phase0 runs when --python is not given:
// $PHASE0_PYTHON, else make's venv when its installation finished.
func DefaultPython() (string, error) {
	if py := os.Getenv(EnvPython); py != "" {
		return absolute(EnvPython, py)
	}
	if makeVenv == "" {
		return "", fmt.Errorf("%w: pass --python /path/to/venv/bin/python or set %s (this phase0 was not built by make, so it knows no venv of its own)",
			ErrNoPython, EnvPython)
	}
	py := filepath.Join(makeVenv, "bin", "python")
	if _, err := os.Stat(filepath.Join(makeVenv, installedStamp)); err != nil {
		return "", fmt.Errorf("%w: make's venv %s is not installed (no %s): run `make venv`, or pass --python or set %s",
			ErrNoPython, makeVenv, installedStamp, EnvPython)
	}
	if _, err := os.Stat(py); err != nil {
		return "", fmt.Errorf("%w: make's venv %s has no python: %w; run `make venv` again", ErrNoPython, makeVenv, err)
	}
	return py, nil
}

// absolute keeps the path as given apart from making it absolute: a venv's
// bin/python is a symlink, and resolving it would leave the venv.
func absolute(source, py string) (string, error) {
	abs, err := filepath.Abs(py)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %w", source, py, err)
	}
	return abs, nil
}
