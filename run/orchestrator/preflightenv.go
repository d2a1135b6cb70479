package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"

	"phase0/gate/preflight"
	"phase0/gate/verdict"
	"phase0/run/chain"
	"phase0/wire"
)

// Preflight says whether this machine is ready for Phase 0 and the phases
// after it: NPU and XRT, memory and disk, the Python environment, the HF
// token and the mlir-air tree. Informational: it never fails a run.
func Preflight(ctx context.Context, s *Settings) *preflight.Report {
	py := s.opsClient()
	defer py.Close()
	return preflight.Run(machineInput(s, func() (wire.Environment, error) { return py.Environment(ctx) }))
}

// machineInput is the preflight input from the settings; environment asks
// the configured interpreter for its versions (facts only).
func machineInput(s *Settings, environment func() (wire.Environment, error)) preflight.Input {
	in := preflight.Input{LLMsDir: s.LLMSDir, Getenv: s.Getenv}
	if cache, err := s.python().Cache(); err == nil {
		in.DiskPath = cache
	}
	if s.Python == "" {
		return in // the python check says it was not given
	}
	env := &preflight.PythonEnv{Executable: s.Python}
	if got, err := environment(); err != nil {
		env.Err = err.Error()
	} else {
		env.Executable, env.Version, env.Torch, env.Transformers, env.Safetensors = got.Executable, got.Version, got.Torch, got.Transformers, got.Safetensors
	}
	env.Executable = filepath.Clean(env.Executable)
	in.Python = env
	return in
}

// machineStage records the machine-readiness section in the run
// report, asking the run's own worker for the Python facts.
func machineStage(ctx context.Context, st *state) (*preflight.Report, outcome, error) {
	in := machineInput(st.in.s, func() (wire.Environment, error) { return st.Py().Environment(ctx) })
	if ctx.Err() != nil {
		return nil, outcome{}, fmt.Errorf("%w in the machine check: %w", chain.ErrInterrupted, ctx.Err())
	}
	if st.inv() != nil {
		in.NeedRAM = st.memoryNeed().Peak
	}
	p := preflight.Run(in)
	// Informational: a machine that is not ready for the later phases is a
	// warning on this run, never its failure.
	status := p.Status
	if status != verdict.Pass {
		status = verdict.Warn
	}
	return p, outcome{Status: status, Detail: p.Summary}, nil
}
