package orchestrator

import (
	"context"
	"path/filepath"

	"phase0/preflight"
	"phase0/verdict"
)

// Preflight says whether this machine is ready for Phase 0 and the phases
// after it: NPU and XRT, memory and disk, the Python environment, the HF
// token and the mlir-air tree. Informational: it never fails a run.
func Preflight(ctx context.Context, s *Settings) *preflight.Report {
	in := preflight.Input{LLMsDir: s.LLMSDir, Getenv: s.getenv, Python: pythonEnv(ctx, s)}
	if cache, err := s.cacheRoot(); err == nil {
		in.DiskPath = cache
	}
	return preflight.Run(in)
}

// pythonEnv asks the configured interpreter for its versions (facts only).
func pythonEnv(ctx context.Context, s *Settings) *preflight.PythonEnv {
	env := &preflight.PythonEnv{Executable: s.Python}
	if err := s.callOnce(ctx, "environment", nil, env); err != nil {
		env.Err = err.Error()
	}
	if env.Executable != "" {
		env.Executable = filepath.Clean(env.Executable)
	}
	return env
}

// preflightSectionStage records the machine-readiness section in the run
// report. It is informational: its status never changes the run's verdict.
func preflightSectionStage(ctx context.Context, st *state) (verdict.Status, string, error) {
	in := preflight.Input{LLMsDir: st.s.LLMSDir, Getenv: st.s.getenv}
	if st.inv != nil {
		_, in.NeedRAM = referenceBytes(st.inv)
	}
	if st.session != nil || st.s.Python != "" {
		sess, err := st.worker(ctx)
		env := &preflight.PythonEnv{Executable: st.s.Python}
		if err == nil {
			_, err = sess.Call("environment", nil, env)
		}
		if err != nil {
			if stop := workerFailure(err); stop != nil && ctx.Err() != nil {
				return "", "", stop
			}
			env.Err = err.Error()
		}
		in.Python = env
	}
	st.preflight = preflight.Run(in)
	// Informational: a machine that is not ready for the later phases is a
	// warning on this run, never its failure.
	status := st.preflight.Status
	if status != verdict.Pass {
		status = verdict.Warn
	}
	return status, st.preflight.Summary, nil
}
