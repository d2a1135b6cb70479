package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"phase0/worker"
)

// ErrNoPython means no interpreter was configured for the Python stages.
var ErrNoPython = errors.New("no Python interpreter configured")

// shimModule holds the entry points the worker calls.
const shimModule = "phase0_shim.ops"

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

// call runs ops in one isolated worker process and decodes each result into out[i].
func (s *Settings) call(ctx context.Context, reqs []worker.Request, out ...any) ([]worker.Response, error) {
	py, err := s.python()
	if err != nil {
		return nil, err
	}
	shim, err := s.shimDir()
	if err != nil {
		return nil, err
	}
	resps, err := worker.Run(ctx, worker.Options{Python: py, ExtraPath: []string{shim}, Timeout: s.Timeout, Stderr: s.Progress}, shimModule, reqs)
	if err != nil {
		return resps, err
	}
	for i := range out {
		if i < len(resps) && out[i] != nil {
			if err := json.Unmarshal(resps[i].Result, out[i]); err != nil {
				return resps, fmt.Errorf("decoding the result of %s: %w", reqs[i].Op, err)
			}
		}
	}
	return resps, nil
}

// request builds a worker request from a Go value.
func request(op string, args any) (worker.Request, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return worker.Request{}, fmt.Errorf("encoding %s arguments: %w", op, err)
	}
	return worker.Request{Op: op, Args: b}, nil
}
