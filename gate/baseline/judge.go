// Package baseline is gate 2: it decides, in Go, whether the HF bf16
// reference's next-token logits are healthy and its perplexity on the
// calibration passage is that of a trained model, and owns the gate's
// section (Baseline). Python only runs the model; every verdict is made here.
package baseline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"phase0/wire"
)

// Input is everything the judgement needs from one prefill.
type Input struct {
	Logits        []float32
	RunnerTop1    int          // the runner's own top1_token
	VocabSize     int          // from the config
	TokenizerSize int          // len(tokenizer)
	PadID, UnkID  *int         // nil when the tokenizer has none
	EOSIDs        []int        // may be empty
	Described     []wire.Token // the runner's top tokens with their text
}

// Stats are the logits' health numbers.
type Stats struct {
	N        int     `json:"n"`
	NaN      int     `json:"nan"`
	PosInf   int     `json:"pos_inf"`
	NegInf   int     `json:"neg_inf"`
	Inf      int     `json:"inf"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	Mean     float64 `json:"mean"`
	Std      float64 `json:"std"`
	Entropy  float64 `json:"entropy"`
	MaxEntr  float64 `json:"max_entropy"`
	Top1Prob float64 `json:"top1_prob"`
}

// Ranked is one of the most probable next tokens.
type Ranked struct {
	ID   int     `json:"id"`
	Text string  `json:"text"`
	Prob float64 `json:"prob"`
}

// Verdict is the judgement of one prefill.
type Verdict struct {
	Pass     bool
	Top1     int
	Top1Text string
	Stats    Stats
	Top      []Ranked // top-10 by probability
	Reasons  []string // why it fails
	Warnings []string
}

// UniformFraction is how close to ln V the entropy may come before the
// distribution counts as degenerate (a model that says nothing).
const UniformFraction = 0.99

// Judge computes the statistics and applies every rule.
func Judge(in Input) Verdict {
	v := Verdict{Top1: -1}
	fail := func(format string, args ...any) { v.Reasons = append(v.Reasons, fmt.Sprintf(format, args...)) }
	warn := func(format string, args ...any) { v.Warnings = append(v.Warnings, fmt.Sprintf(format, args...)) }

	n := len(in.Logits)
	switch {
	case n == 0:
		fail("the runner returned no logits")
		return v
	case n == in.VocabSize:
	case in.TokenizerSize > 0 && n >= in.TokenizerSize:
		warn("logits length %d differs from config vocab_size %d but covers the tokenizer's %d tokens", n, in.VocabSize, in.TokenizerSize)
	default:
		fail("logits length %d, expected vocab_size %d (tokenizer has %d tokens)", n, in.VocabSize, in.TokenizerSize)
	}

	v.Stats = stats(in.Logits)
	s := &v.Stats
	if s.NaN > 0 || s.Inf > 0 {
		fail("logits contain %d NaN and %d ±Inf values (of %d)", s.NaN, s.Inf, n)
	}
	finite := n - s.NaN - s.Inf
	if finite == 0 {
		return v
	}
	v.Top = topK(in.Logits, s, 10, in.Described)
	v.Top1, v.Top1Text = v.Top[0].ID, v.Top[0].Text

	if s.Max == s.Min {
		fail("all %d finite logits equal %g: the distribution is constant", finite, s.Max)
	} else if s.Entropy >= UniformFraction*s.MaxEntr {
		fail("entropy %.4f nats is %.2f%% of the uniform maximum ln %d = %.4f: the distribution is near-uniform", s.Entropy, 100*s.Entropy/s.MaxEntr, finite, s.MaxEntr)
	}
	if v.Top1 != in.RunnerTop1 {
		fail("Go's argmax %d differs from the runner's top1_token %d: the logits were corrupted on the way", v.Top1, in.RunnerTop1)
	}
	limit := in.TokenizerSize
	if limit <= 0 || limit > n {
		limit = n
	}
	switch d := describe(in.Described, v.Top1); {
	case v.Top1 >= limit:
		fail("top-1 id %d is outside the tokenizer's %d tokens", v.Top1, limit)
	case in.PadID != nil && v.Top1 == *in.PadID && !slices.Contains(in.EOSIDs, v.Top1):
		fail("top-1 is the pad token (id %d)", v.Top1)
	case in.UnkID != nil && v.Top1 == *in.UnkID:
		fail("top-1 is the unknown token (id %d)", v.Top1)
	case d != nil && d.Placeholder:
		fail("top-1 is a reserved placeholder token %q (id %d)", d.Text, v.Top1)
	case slices.Contains(in.EOSIDs, v.Top1):
		warn("top-1 is end-of-sequence (id %d): plausible for some prompts, but check the prompt style", v.Top1)
	case d != nil && strings.TrimSpace(d.Text) == "":
		warn("top-1 %q (id %d) is whitespace only", d.Text, v.Top1)
	case d == nil:
		warn("the runner did not describe the top-1 token %d", v.Top1)
	}
	v.Pass = len(v.Reasons) == 0
	return v
}

func describe(ts []wire.Token, id int) *wire.Token {
	for i := range ts {
		if ts[i].ID == id {
			return &ts[i]
		}
	}
	return nil
}

// stats computes the health numbers in float64 over the finite logits, with
// a stable log-softmax: log p_i = x_i - max - log Σ exp(x_j - max).
func stats(logits []float32) Stats {
	s := Stats{N: len(logits), Min: math.Inf(1), Max: math.Inf(-1)}
	var sum float64
	finite := 0
	for _, f := range logits {
		x := float64(f)
		switch {
		case math.IsNaN(x):
			s.NaN++
			continue
		case math.IsInf(x, 1):
			s.PosInf++
			continue
		case math.IsInf(x, -1):
			s.NegInf++
			continue
		}
		finite++
		sum += x
		s.Min = math.Min(s.Min, x)
		s.Max = math.Max(s.Max, x)
	}
	s.Inf = s.PosInf + s.NegInf
	if finite == 0 {
		s.Min, s.Max = 0, 0
		return s
	}
	s.Mean = sum / float64(finite)
	var sq, z float64
	for _, f := range logits {
		x := float64(f)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		d := x - s.Mean
		sq += d * d
		z += math.Exp(x - s.Max)
	}
	s.Std = math.Sqrt(sq / float64(finite))
	logZ := math.Log(z)
	var h float64
	for _, f := range logits {
		x := float64(f)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		lp := x - s.Max - logZ
		h -= math.Exp(lp) * lp
	}
	s.Entropy = h
	s.MaxEntr = math.Log(float64(finite))
	s.Top1Prob = math.Exp(-logZ) // p(argmax) = exp(max - max - logZ)
	return s
}

// topK returns the k most probable finite tokens, ties broken by lower id.
func topK(logits []float32, s *Stats, k int, described []wire.Token) []Ranked {
	idx := make([]int, 0, len(logits))
	for i, f := range logits {
		x := float64(f)
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	if len(idx) > k {
		idx = idx[:k]
	}
	logZ := -math.Log(s.Top1Prob)
	out := make([]Ranked, len(idx))
	for i, id := range idx {
		out[i] = Ranked{ID: id, Prob: math.Exp(float64(logits[id]) - s.Max - logZ)}
		if d := describe(described, id); d != nil {
			out[i].Text = d.Text
		}
	}
	return out
}

// Repetition reports whether a greedy continuation is stuck repeating itself:
// the same token n-gram (n = 1..4) filling the last half of the ids.
func Repetition(ids []int) (bool, string) {
	if len(ids) < 8 {
		return false, ""
	}
	tail := ids[len(ids)/2:]
	for n := 1; n <= 4; n++ {
		if len(tail) < 2*n {
			break
		}
		loop := true
		for i := n; i < len(tail); i++ {
			if tail[i] != tail[i-n] {
				loop = false
				break
			}
		}
		if loop {
			return true, fmt.Sprintf("the last %d generated tokens repeat a %d-token pattern", len(tail), n)
		}
	}
	return false, ""
}

// ErrPromptTooLong marks a prompt (given, or the canonical one) that does
// not fit max_seq with the continuation asked for: the settings are wrong,
// not the model, so the run could not evaluate it (exit 2), never a FAIL.
var ErrPromptTooLong = errors.New("the prompt does not fit max_seq")

// CheckPromptFits judges the prompt's length in the model's tokens (the
// worker's prompt_tokens fact) against max_seq, with decodeN greedy tokens
// after the prefill (the first comes from the prefill itself).
func CheckPromptFits(tokens, decodeN, maxSeq int, given bool) error {
	if tokens+max(decodeN-1, 0) <= maxSeq {
		return nil
	}
	which := "the canonical prompt"
	if given {
		which = "the prompt given"
	}
	decode := ""
	if decodeN > 1 {
		decode = fmt.Sprintf(" plus %d decoded", decodeN-1)
	}
	return fmt.Errorf("%w: %s has %d tokens with this model's tokenizer%s, and max_seq is %d: shorten the prompt or raise max_seq (a --config file's max_seq, PHASE0_MAX_SEQ or the max_seq option)",
		ErrPromptTooLong, which, tokens, decode, maxSeq)
}
