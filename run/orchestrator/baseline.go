package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"phase0/gate/baseline"
	"phase0/output/report"
	"phase0/read/model"
	"phase0/run/reuse"
	"phase0/wire"
)

// BaselineRequest builds ops.baseline's arguments for the canonical-prompt prefill.
func BaselineRequest(s *Settings, ref *resolvedModel, cfg *model.Config, weightsModule string) wire.BaselineArgs {
	style := s.PromptStyle
	if style == "" && s.Prompt == "" {
		style = ref.PromptStyle
	}
	return wire.BaselineArgs{
		ModelDir: ref.Dir, ModelID: ref.ID, LLMSDir: s.LLMSDir, PromptStyle: style, Prompt: s.Prompt,
		Config: cfg, WeightsModule: weightsModule, MaxSeq: s.MaxSeq, DecodeN: s.Decode,
	}
}

// hfBaselineStage runs gate 2: the canonical prompt through the reference
// HfRunner in the Python worker (with the generated LlamaConfig when the
// run generated one), judged by baseline.Gate2.
func hfBaselineStage(ctx context.Context, st *state) (*baseline.Baseline, outcome, error) {
	start := time.Now()
	args := BaselineRequest(st.in.s, st.facts.model, st.facts.analysis.Config, st.weightsModule())
	if err := st.PromptFits(ctx, args); err != nil {
		return nil, outcome{}, err
	}
	res, logits, err := st.Py().Baseline(ctx, args)
	if err != nil {
		if stop := WorkerFailure(err); stop != nil {
			return nil, outcome{}, stop
		}
		b := baseline.NewBaseline()
		b.Seconds = time.Since(start).Seconds()
		b.Fail(st.Explain("hf_baseline", err))
		return b, outcome{Status: b.Status, Detail: b.Summary}, nil
	}
	if err := runnerIsVerifys(st.in.s, res.RunnerPath); err != nil {
		return nil, outcome{}, err
	}
	b := baseline.FromRunner(&res, logits, st.facts.analysis.Config.VocabSize, res.SecondsLoad+res.SecondsPrefill, st.in.s.MaxPerplexityRatio)
	return b, outcome{Status: b.Status, Detail: b.Summary}, nil
}

// PromptFits refuses, before the model loads, a prompt that does not fit
// max_seq (baseline.CheckPromptFits), counted by the tokenizer alone; a
// count that raises is left to the baseline op to report.
func (st *state) PromptFits(ctx context.Context, args wire.BaselineArgs) error {
	r, err := st.Py().PromptTokens(ctx, args)
	if err != nil {
		return WorkerFailure(err)
	}
	return baseline.CheckPromptFits(r.Tokens, args.DecodeN, args.MaxSeq, args.Prompt != "")
}

// runnerIsVerifys checks that a baseline from an llms tree came from the
// runner upstream's README names, <llms>/verify/runners/hf_runner.py: a
// baseline from any other file cannot be judged (exit 2), whatever it says.
func runnerIsVerifys(s *Settings, ran string) error {
	if s.LLMSDir == "" {
		return nil
	}
	want := filepath.Join(reuse.AbsPath(s.LLMSDir), "verify", "runners", "hf_runner.py")
	if resolved, err := filepath.EvalSymlinks(want); err == nil {
		want = resolved
	}
	if ran != want {
		return fmt.Errorf("the baseline ran the runner %s, not %s (the runner upstream's README names)", ran, want)
	}
	return nil
}

// memoryApplies: the memory check is on and there is a checkpoint to size.
func memoryApplies(st *state) (bool, string) {
	if !st.in.s.MemoryCheck {
		return false, "memory_check is off"
	}
	if st.inv() == nil {
		return false, "no inventory"
	}
	return true, ""
}

// BaselineRun runs inspect, then gate 2 through the isolated worker.
func BaselineRun(ctx context.Context, s *Settings, modelArg, version string) *report.Report {
	return runChain(ctx, s, "baseline", modelArg, version, withoutSkippedScan(baselineStages, s))
}

// pythonStage checks, before anything is read or written, that an
// interpreter is configured: without one the command cannot evaluate.
func pythonStage(_ context.Context, st *state) (outcome, error) {
	py, err := st.in.s.python().Interpreter()
	if err != nil {
		return outcome{}, err
	}
	info, err := st.in.s.Probes.Inspect(py)
	if err != nil {
		return outcome{}, fmt.Errorf("%w: %w", ErrNoPython, err)
	}
	return pass(fmt.Sprintf("%s (Python %s)", py, info.Version)), nil
}
