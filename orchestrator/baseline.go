package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"phase0/judge"
	"phase0/model"
	"phase0/weights"
	"phase0/worker"
)

// Baseline is gates.hf_baseline: the HF bf16 reference on the canonical prompt.
type Baseline struct {
	Status         string         `json:"status"`
	Runner         string         `json:"runner"`
	RunnerPath     string         `json:"runner_path"`
	Prompt         string         `json:"prompt"`
	PromptStyle    string         `json:"prompt_style"`
	Tokens         []int          `json:"tokens"`
	Top1Token      int            `json:"top1_token"`
	Top1Text       string         `json:"top1_text"`
	Top5           []judge.Ranked `json:"top5"`
	Top10          []judge.Ranked `json:"top10"`
	Logits         judge.Stats    `json:"logits"`
	Reasons        []string       `json:"reasons"`
	Warnings       []string       `json:"warnings"`
	Decode         *Decode        `json:"decode,omitempty"`
	Seconds        float64        `json:"seconds"`
	SecondsLoad    float64        `json:"seconds_load"`
	SecondsPrefill float64        `json:"seconds_prefill"`
	Torch          string         `json:"torch_version,omitempty"`
	Transformers   string         `json:"transformers_version,omitempty"`
}

// Decode is the optional greedy continuation.
type Decode struct {
	IDs  []int  `json:"ids"`
	Text string `json:"text"`
}

// baselineArgs are ops.baseline's arguments.
type baselineArgs struct {
	ModelDir      string        `json:"model_dir"`
	ModelID       string        `json:"model_id"`
	LLMSDir       string        `json:"llms_dir,omitempty"`
	PromptStyle   string        `json:"prompt_style,omitempty"`
	Prompt        string        `json:"prompt,omitempty"`
	Config        *model.Config `json:"config"`
	WeightsModule string        `json:"weights_module,omitempty"`
	MaxSeq        int           `json:"max_seq"`
	DecodeN       int           `json:"decode_n"`
}

// baselineResult is what ops.baseline reports (facts; Go judges).
type baselineResult struct {
	Runner        string `json:"runner"`
	RunnerPath    string `json:"runner_path"`
	Prompt        string `json:"prompt"`
	PromptStyle   string `json:"prompt_style"`
	Tokens        []int  `json:"tokens"`
	Top1Token     int    `json:"top1_token"`
	VocabSize     int    `json:"vocab_size"`
	TokenizerSize int    `json:"tokenizer_size"`
	Special       struct {
		BOS *int  `json:"bos"`
		EOS []int `json:"eos"`
		Pad *int  `json:"pad"`
		Unk *int  `json:"unk"`
	} `json:"special"`
	Top            []judge.Token `json:"top"`
	Decode         *Decode       `json:"decode"`
	SecondsLoad    float64       `json:"seconds_load"`
	SecondsPrefill float64       `json:"seconds_prefill"`
	Torch          string        `json:"torch_version"`
	Transformers   string        `json:"transformers_version"`
}

func newBaseline() *Baseline {
	return &Baseline{Status: weights.StatusFail, Tokens: []int{}, Top5: []judge.Ranked{}, Top10: []judge.Ranked{}, Reasons: []string{}, Warnings: []string{}, Top1Token: -1}
}

// failedBaseline is the section for a prefill that never returned logits.
func failedBaseline(err error, seconds float64) *Baseline {
	b := newBaseline()
	b.Seconds = seconds
	b.Reasons = append(b.Reasons, pythonFailure(err)...)
	return b
}

// detail is the one-line stage summary: the top-1, or why the gate failed.
func (b *Baseline) detail() string {
	if b.Status != weights.StatusPass && len(b.Reasons) > 0 {
		return b.Reasons[0]
	}
	return fmt.Sprintf("top-1 %d %q p=%.3f (%s runner)", b.Top1Token, b.Top1Text, b.Logits.Top1Prob, b.Runner)
}

// baselineRequest builds the worker request for the canonical-prompt prefill.
func baselineRequest(s *Settings, ref *resolvedModel, cfg *model.Config, weightsModule string) (worker.Request, error) {
	style := s.PromptStyle
	if style == "" && s.Prompt == "" {
		style = ref.PromptStyle
	}
	return request("baseline", baselineArgs{
		ModelDir: ref.Dir, ModelID: ref.ID, LLMSDir: s.LLMSDir, PromptStyle: style, Prompt: s.Prompt,
		Config: cfg, WeightsModule: weightsModule, MaxSeq: s.MaxSeq, DecodeN: s.Decode,
	})
}

// judgeBaseline turns the runner's facts and logits into the gate section.
func judgeBaseline(res *baselineResult, logits []float32, seconds float64) *Baseline {
	b := newBaseline()
	b.Seconds = seconds
	b.Runner, b.RunnerPath, b.Prompt, b.PromptStyle = res.Runner, res.RunnerPath, res.Prompt, res.PromptStyle
	b.Tokens = append(b.Tokens, res.Tokens...)
	b.SecondsLoad, b.SecondsPrefill = res.SecondsLoad, res.SecondsPrefill
	b.Torch, b.Transformers = res.Torch, res.Transformers
	v := judge.Judge(judge.Input{
		Logits: logits, RunnerTop1: res.Top1Token, VocabSize: res.VocabSize, TokenizerSize: res.TokenizerSize,
		PadID: res.Special.Pad, UnkID: res.Special.Unk, EOSIDs: res.Special.EOS, Described: res.Top,
	})
	b.Top1Token, b.Top1Text, b.Logits = v.Top1, v.Top1Text, v.Stats
	b.Top10 = append(b.Top10, v.Top...)
	b.Top5 = append(b.Top5, v.Top[:min(5, len(v.Top))]...)
	b.Reasons = append(b.Reasons, v.Reasons...)
	b.Warnings = append(b.Warnings, v.Warnings...)
	if res.Decode != nil {
		b.Decode = res.Decode
		if loop, why := judge.Repetition(res.Decode.IDs); loop {
			b.Warnings = append(b.Warnings, "greedy continuation: "+why)
		}
	}
	if v.Pass {
		b.Status = weights.StatusPass
	}
	return b
}

// pythonFailure describes a worker failure as baseline reasons: the cause and
// the tail of what Python printed, never a Go stack.
func pythonFailure(err error) []string {
	var op *worker.OpError
	var crash *worker.CrashError
	var timeout *worker.TimeoutError
	switch {
	case errors.As(err, &op):
		return []string{fmt.Sprintf("%s raised %s: %s", op.Op, op.Type, op.Message), "traceback:\n" + op.Traceback}
	case errors.As(err, &crash):
		return []string{fmt.Sprintf("the Python worker %s", crash.Cause), "last output:\n" + tailLines(crash.StderrTail, 30)}
	case errors.As(err, &timeout):
		return []string{fmt.Sprintf("the Python worker timed out after %s (raise --timeout); its process group was killed", timeout.After.Round(time.Second)), "last output:\n" + tailLines(timeout.StderrTail, 30)}
	}
	return []string{err.Error()}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Baseline runs inspect, then gate 2 through the isolated worker.
func BaselineRun(ctx context.Context, s *Settings, modelArg, version string) *Report {
	r := NewReport("baseline", modelArg, version)
	insp := r.inspect(ctx, s)
	if insp == nil || r.Status == StatusError || r.Status == StatusRejected {
		r.finish()
		return r
	}
	if r.preflight(s, insp) {
		if r.Gates.Weights.Status == weights.StatusPass {
			r.baseline(ctx, s, insp, "")
		} else {
			r.Warnings = append(r.Warnings, "the HF baseline was skipped: the checkpoint failed the native weights gate, and transformers would fill missing tensors with random values")
		}
	}
	r.finish()
	return r
}

func (r *Report) baseline(ctx context.Context, s *Settings, insp *inspection, weightsModule string) {
	r.timed(s, "hf_baseline", func() (string, string) {
		start := time.Now()
		req, err := baselineRequest(s, insp.ref, insp.analysis.Config, weightsModule)
		if err != nil {
			r.fail(err)
			return StatusError, err.Error()
		}
		var res baselineResult
		resps, err := s.call(ctx, []worker.Request{req}, &res)
		if errors.Is(err, ErrNoPython) {
			r.fail(err)
			return StatusError, err.Error()
		}
		if err != nil {
			b := failedBaseline(err, time.Since(start).Seconds())
			r.Gates.HFBaseline = b
			return b.Status, b.detail()
		}
		b := judgeBaseline(&res, resps[0].Floats, time.Since(start).Seconds())
		r.Gates.HFBaseline = b
		return b.Status, b.detail()
	})
}
