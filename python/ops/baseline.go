package ops

import (
	"phase0/gate/baseline"
	"phase0/wire"
)

// BaselineSection hands the runner's facts and logits to gate 2 (baseline.Gate2)
// and records the runner's descriptive facts in the section. vocab is the
// checkpoint's vocab_size (config.json, as Go extracted it): the logits come
// from the HF model, whatever a module's Config says.
func BaselineSection(res *wire.BaselineResult, logits []float32, vocab int, seconds, maxPerplexityRatio float64) *baseline.Baseline {
	b := baseline.NewBaseline()
	b.Seconds = seconds
	b.RunnerPath, b.Prompt, b.PromptStyle = res.RunnerPath, res.Prompt, res.PromptStyle
	b.Tokens = append(b.Tokens, res.Tokens...)
	b.SecondsLoad, b.SecondsPrefill, b.SecondsCalibration = res.SecondsLoad, res.SecondsPrefill, res.SecondsCalib
	b.Torch, b.Transformers = res.Torch, res.Transformers
	f := baseline.Facts{
		Prefill: baseline.Input{
			Logits: logits, RunnerTop1: res.Top1Token, VocabSize: vocab, TokenizerSize: res.TokenizerSize,
			PadID: res.Special.Pad, UnkID: res.Special.Unk, EOSIDs: res.Special.EOS, Described: Described(res.Top),
		},
		Runner: res.Runner,
	}
	if d := res.Decode; d != nil {
		f.Decode = &baseline.Continuation{IDs: d.IDs, Text: d.Text}
	}
	if p := res.Calibration; p != nil {
		f.Passage = &baseline.PassageInput{Passage: p.Passage, Tokens: p.Tokens, NLL: p.NLL, VocabSize: vocab, MaxRatio: maxPerplexityRatio}
	}
	baseline.Gate2(b, f)
	return b
}

// Described is the tokens as the judge reads them.
func Described(top []wire.TopToken) []wire.Token {
	out := make([]wire.Token, len(top))
	for i, t := range top {
		out[i] = t.Token
	}
	return out
}
