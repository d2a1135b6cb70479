package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"phase0/gate/baseline"
	"phase0/output/report"
	"phase0/python/bridge"
	"phase0/python/ops"
	"phase0/read/model"
	"phase0/run/reuse"
)

// baselineRequest builds ops.baseline's arguments for the canonical-prompt prefill.
func baselineRequest(s *Settings, ref *resolvedModel, cfg *model.Config, weightsModule string) ops.BaselineArgs {
	style := s.PromptStyle
	if style == "" && s.Prompt == "" {
		style = ref.PromptStyle
	}
	return ops.BaselineArgs{
		ModelDir: ref.Dir, ModelID: ref.ID, LLMSDir: s.LLMSDir, PromptStyle: style, Prompt: s.Prompt,
		Config: cfg, WeightsModule: weightsModule, MaxSeq: s.MaxSeq, DecodeN: s.Decode,
	}
}

// hfBaselineStage runs gate 2: the canonical prompt through the reference
// HfRunner in the Python worker (with the generated LlamaConfig when the
// run generated one), judged by baseline.Gate2.
func hfBaselineStage(ctx context.Context, st *state) (*baseline.Baseline, outcome, error) {
	start := time.Now()
	args := baselineRequest(st.in.s, st.facts.model, st.facts.analysis.Config, st.weightsModule())
	if err := promptFits(ctx, st, args); err != nil {
		return nil, outcome{}, err
	}
	res, logits, err := st.py().Baseline(ctx, args)
	if err != nil {
		if stop := workerFailure(err); stop != nil {
			return nil, outcome{}, stop
		}
		b := baseline.NewBaseline()
		b.Seconds = time.Since(start).Seconds()
		b.Fail(st.explain("hf_baseline", err))
		return b, outcome{status: b.Status, detail: b.Summary}, nil
	}
	if err := runnerIsVerifys(st.in.s, res.RunnerPath); err != nil {
		return nil, outcome{}, err
	}
	b := ops.BaselineSection(&res, logits, st.facts.analysis.Config.VocabSize, res.SecondsLoad+res.SecondsPrefill, st.in.s.MaxPerplexityRatio)
	return b, outcome{status: b.Status, detail: b.Summary}, nil
}

// ErrPromptTooLong marks a prompt (given, or the canonical one) that does
// not fit max_seq with the continuation asked for: the settings are wrong,
// not the model, so the run could not evaluate it (exit 2), never a FAIL.
var ErrPromptTooLong = errors.New("the prompt does not fit max_seq")

// promptFits asks the worker for the canonical prompt's length in the
// model's tokens (the tokenizer only, no model loaded) and refuses a prompt
// that, with the decoded continuation, exceeds max_seq. When the count
// itself raises (a broken tokenizer), the baseline op says so as before.
func promptFits(ctx context.Context, st *state, args ops.BaselineArgs) error {
	r, err := st.py().PromptTokens(ctx, args)
	if err != nil {
		return workerFailure(err)
	}
	need := r.Tokens + max(args.DecodeN-1, 0)
	if need <= args.MaxSeq {
		return nil
	}
	which := "the canonical prompt"
	if args.Prompt != "" {
		which = "the prompt given"
	}
	decode := ""
	if args.DecodeN > 1 {
		decode = fmt.Sprintf(" plus %d decoded", args.DecodeN-1)
	}
	return fmt.Errorf("%w: %s has %d tokens with this model's tokenizer%s, and max_seq is %d: shorten the prompt or raise max_seq (a --config file's max_seq, PHASE0_MAX_SEQ or the max_seq option)",
		ErrPromptTooLong, which, r.Tokens, decode, args.MaxSeq)
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
	py, err := st.in.s.python()
	if err != nil {
		return outcome{}, err
	}
	info, err := bridge.Inspect(py)
	if err != nil {
		return outcome{}, fmt.Errorf("%w: %w", ErrNoPython, err)
	}
	return pass(fmt.Sprintf("%s (Python %s)", py, info.Version)), nil
}
