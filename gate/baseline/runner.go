package baseline

import "phase0/wire"

// FromRunner hands the runner's facts and logits (op baseline) to gate 2
// (Gate2) and records the runner's descriptive facts in the section. vocab
// is the checkpoint's vocab_size (config.json, as Go extracted it): the
// logits come from the HF model, whatever a module's Config says.
func FromRunner(res *wire.BaselineResult, logits []float32, vocab int, seconds, maxPerplexityRatio float64) *Baseline {
	b := NewBaseline()
	b.Seconds = seconds
	b.RunnerPath, b.Prompt, b.PromptStyle = res.RunnerPath, res.Prompt, res.PromptStyle
	b.Tokens = append(b.Tokens, res.Tokens...)
	b.SecondsLoad, b.SecondsPrefill, b.SecondsCalibration = res.SecondsLoad, res.SecondsPrefill, res.SecondsCalib
	b.Torch, b.Transformers = res.Torch, res.Transformers
	described := make([]wire.Token, len(res.Top))
	for i, t := range res.Top {
		described[i] = t.Token
	}
	f := Facts{
		Prefill: Input{
			Logits: logits, RunnerTop1: res.Top1Token, VocabSize: vocab, TokenizerSize: res.TokenizerSize,
			PadID: res.Special.Pad, UnkID: res.Special.Unk, EOSIDs: res.Special.EOS, Described: described,
		},
		Runner: res.Runner,
	}
	if d := res.Decode; d != nil {
		f.Decode = &Continuation{IDs: d.IDs, Text: d.Text}
	}
	if p := res.Calibration; p != nil {
		f.Passage = &PassageInput{Passage: p.Passage, Tokens: p.Tokens, NLL: p.NLL, VocabSize: vocab, MaxRatio: maxPerplexityRatio}
	}
	Gate2(b, f)
	return b
}
