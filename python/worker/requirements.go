package worker

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"phase0/internal/errmark"
)

// requirements are the modules phase0's Python side imports (requirements.txt),
// by import name, with the name pip installs them by.
var requirements = map[string]string{"torch": "torch", "transformers": "transformers", "safetensors": "safetensors",
	"tokenizers": "tokenizers", "numpy": "numpy", "ml_dtypes": "ml_dtypes", "huggingface_hub": "huggingface_hub"}

// noModule reads the module name out of Python's "No module named 'x.y'".
var noModule = regexp.MustCompile(`No module named '([A-Za-z0-9_.]+)'`)

// MissingRequirement is the could-not-evaluate error (exit 2) for an op that
// raised ModuleNotFoundError for one of phase0's own requirements: the
// interpreter lacks a package, which says nothing about the model, so no
// gate may FAIL on it (and no record is replaced). nil for anything else;
// a module the workspace's own code imports stays that code's failure.
func MissingRequirement(err error) error {
	var we *Error
	if !errors.As(err, &we) || we.Kind != KindRaised || we.Py == nil || we.Py.Type != "ModuleNotFoundError" {
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
	return errmark.With(ErrMissingRequirement, fmt.Sprintf("the Python environment lacks %s, which phase0 needs (%s raised ModuleNotFoundError: %s): install it with `<python> -m pip install %s` into the interpreter phase0 runs (--python or PHASE0_PYTHON), or let `make venv` prepare one with all of requirements.txt",
		top, we.Op, we.Py.Message, pip), nil)
}

// ErrMissingRequirement is in the chain of MissingRequirement's errors
// (errors.Is).
var ErrMissingRequirement = errors.New("the Python environment lacks a package phase0 needs")

// Raised is the message of the Python exception err carries when an op
// raised one of type typ (its module-qualified name, as the bridge names
// it: "phase0_shim.reference.RecordingWriteError").
func Raised(err error, typ string) (string, bool) {
	var we *Error
	if !errors.As(err, &we) || we.Kind != KindRaised || we.Py == nil || we.Py.Type != typ {
		return "", false
	}
	return we.Py.Message, true
}
