package orchestrator

import (
	"context"
	"fmt"
	"time"

	"phase0/bridge"
	"phase0/judge"
	"phase0/model"
	"phase0/ops"
	"phase0/report"
	"phase0/verdict"
)

func newBaseline() *report.Baseline {
	return &report.Baseline{Section: verdict.NewSection(), Tokens: []int{}, Top5: []judge.Ranked{}, Top10: []judge.Ranked{}, Reasons: []string{}, Warnings: []string{}, Top1Token: -1}
}

// failBaseline records why the gate failed.
func failBaseline(b *report.Baseline, reasons ...string) {
	for _, r := range reasons {
		b.Reasons = append(b.Reasons, r)
		b.FailWith("%s", r)
	}
	b.Summary = b.Reasons[0]
}

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

// judgeBaseline turns the runner's facts and logits into the gate section.
// vocab is the checkpoint's vocab_size (config.json, as Go extracted it):
// the logits come from the HF model, whatever a module's Config says.
func judgeBaseline(res *ops.BaselineResult, logits []float32, vocab int, seconds, maxPerplexityRatio float64) *report.Baseline {
	b := newBaseline()
	b.Seconds = seconds
	b.Runner, b.RunnerPath, b.Prompt, b.PromptStyle = res.Runner, res.RunnerPath, res.Prompt, res.PromptStyle
	b.Tokens = append(b.Tokens, res.Tokens...)
	b.SecondsLoad, b.SecondsPrefill = res.SecondsLoad, res.SecondsPrefill
	b.Torch, b.Transformers = res.Torch, res.Transformers
	v := judge.Judge(judge.Input{
		Logits: logits, RunnerTop1: res.Top1Token, VocabSize: vocab, TokenizerSize: res.TokenizerSize,
		PadID: res.Special.Pad, UnkID: res.Special.Unk, EOSIDs: res.Special.EOS, Described: ops.Described(res.Top),
	})
	b.Top1Token, b.Top1Text, b.Logits = v.Top1, v.Top1Text, v.Stats
	b.Top10 = append(b.Top10, v.Top...)
	b.Top5 = append(b.Top5, v.Top[:min(5, len(v.Top))]...)
	b.Warnings = append(b.Warnings, v.Warnings...)
	if res.Decode != nil {
		b.Decode = res.Decode
		if loop, why := judge.Repetition(res.Decode.IDs); loop {
			b.Warnings = append(b.Warnings, "greedy continuation: "+why)
		}
	}
	b.SecondsCalibration = res.SecondsCalib
	failed := v.Reasons
	if why := judgeCalibration(b, res.Calibration, vocab, maxPerplexityRatio); why != "" {
		failed = append(failed, why)
	}
	if len(failed) > 0 {
		failBaseline(b, failed...)
		return b
	}
	c := b.Calibration
	b.Summary = fmt.Sprintf("top-1 %d %q p=%.3f, entropy %.2f nats, passage perplexity %.4g (limit %.4g = %g × V %d), %s runner",
		b.Top1Token, b.Top1Text, b.Logits.Top1Prob, b.Logits.Entropy, c.Perplexity, c.Limit, c.MaxRatio, c.VocabSize, b.Runner)
	return b
}

// hfBaselineStage runs gate 2: the canonical prompt through the reference
// HfRunner in the Python worker (with the generated LlamaConfig when the
// run generated one), judged here.
func hfBaselineStage(ctx context.Context, st *state) (verdict.Status, string, error) {
	start := time.Now()
	module := ""
	if st.spec.Name != "" {
		module = st.weightsModule()
	}
	args := baselineRequest(st.s, st.ref, st.analysis.Config, module)
	res, logits, err := st.py().Baseline(ctx, args)
	if err != nil {
		if stop := workerFailure(err); stop != nil {
			return "", "", stop
		}
		st.baseline = newBaseline()
		st.baseline.Seconds = time.Since(start).Seconds()
		failBaseline(st.baseline, reasons(err)...)
		return st.baseline.Status, st.baseline.Summary, nil
	}
	st.baseline = judgeBaseline(&res, logits, st.analysis.Config.VocabSize, res.SecondsLoad+res.SecondsPrefill, st.s.MaxPerplexityRatio)
	return st.baseline.Status, st.baseline.Summary, nil
}

// baselineStages are inspect, the memory preflight and gate 2.
var baselineStages = append(append([]stage{{name: "llms_dir", run: llmsDirStage}, {name: "python", run: pythonStage}}, inspectStages...),
	stage{name: "preflight", when: preflightApplies, run: preflightStage},
	stage{name: "hf_baseline", when: pythonReady, run: hfBaselineStage},
)

// preflightApplies: the memory check is on and there is a checkpoint to size.
func preflightApplies(st *state) (bool, string) {
	if !st.s.MemoryCheck {
		return false, "memory_check is off"
	}
	if st.inv == nil {
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
func pythonStage(_ context.Context, st *state) (verdict.Status, string, error) {
	py, err := st.s.python()
	if err != nil {
		return "", "", err
	}
	info, err := bridge.Inspect(py)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrNoPython, err)
	}
	return verdict.Pass, fmt.Sprintf("%s (Python %s)", py, info.Version), nil
}
