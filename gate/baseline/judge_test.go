package baseline

import (
	"errors"
	"math"
	"strings"
	"testing"

	"phase0/wire"
)

// peaked returns logits where id `top` clearly wins over a spread of others.
func peaked(n, top int) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(math.Sin(float64(i))) * 2
	}
	l[top] = 12
	return l
}

func ip(i int) *int { return &i }

func base(logits []float32, top int) Input {
	return Input{Logits: logits, RunnerTop1: top, VocabSize: len(logits), TokenizerSize: len(logits),
		PadID: ip(0), UnkID: ip(1), EOSIDs: []int{2},
		Described: []wire.Token{{ID: 3, Text: "\n"}, {ID: 4, Text: "<|reserved_special_token_4|>", Special: true, Placeholder: true}, {ID: top, Text: " Paris"}}}
}

func TestHealthyLogitsPass(t *testing.T) {
	in := base(peaked(1000, 42), 42)
	v := Judge(in)
	if !v.Pass || v.Top1 != 42 || v.Top1Text != " Paris" || len(v.Top) != 10 {
		t.Fatalf("verdict %+v", v)
	}
	var sum float64
	for _, r := range v.Top {
		sum += r.Prob
	}
	if v.Top[0].Prob != v.Stats.Top1Prob || sum > 1+1e-12 || v.Top[0].Prob < 0.5 {
		t.Errorf("probabilities inconsistent: top1 %v, top-10 sum %v", v.Top1Prob(), sum)
	}
}

func (v Verdict) Top1Prob() float64 { return v.Stats.Top1Prob }

func TestStatsAgainstDirectFormula(t *testing.T) {
	l := []float32{1, 2, 3, 4}
	s := stats(l)
	z := math.Exp(1) + math.Exp(2) + math.Exp(3) + math.Exp(4)
	var h float64
	for _, x := range l {
		p := math.Exp(float64(x)) / z
		h -= p * math.Log(p)
	}
	if math.Abs(s.Entropy-h) > 1e-12 || math.Abs(s.Top1Prob-math.Exp(4)/z) > 1e-12 || s.Mean != 2.5 || math.Abs(s.Std-math.Sqrt(1.25)) > 1e-12 {
		t.Errorf("stats %+v, want entropy %v", s, h)
	}
	// Stability: huge logits must not overflow.
	big := stats([]float32{3e38, 3e38 - 1e32, 0})
	if math.IsNaN(big.Entropy) || math.IsInf(big.Entropy, 0) {
		t.Errorf("unstable entropy %v", big.Entropy)
	}
}

func TestFailures(t *testing.T) {
	nan := peaked(100, 10)
	nan[5], nan[6] = float32(math.NaN()), float32(math.Inf(-1))
	flat := make([]float32, 100)
	nearUniform := make([]float32, 100)
	for i := range nearUniform {
		nearUniform[i] = float32(i%2) * 1e-3
	}
	tests := []struct {
		name string
		in   Input
		text string
	}{
		{"nan and inf", base(nan, 10), "1 NaN and 1 ±Inf"},
		{"constant", base(flat, 0), "constant"},
		{"near uniform", base(nearUniform, 1), "near-uniform"},
		{"argmax differs", func() Input { in := base(peaked(100, 10), 10); in.RunnerTop1 = 11; return in }(), "differs from the runner's top1_token 11"},
		{"short logits", func() Input { in := base(peaked(100, 10), 10); in.VocabSize, in.TokenizerSize = 200, 150; return in }(), "logits length 100, expected vocab_size 200"},
		{"pad top1", base(peaked(100, 0), 0), "pad token"},
		{"unk top1", base(peaked(100, 1), 1), "unknown token"},
		{"placeholder", base(peaked(100, 4), 4), "reserved placeholder"},
		{"beyond tokenizer", func() Input { in := base(peaked(100, 90), 90); in.TokenizerSize = 80; return in }(), "outside the tokenizer's 80 tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.in)
			if v.Pass || !strings.Contains(strings.Join(v.Reasons, "; "), tt.text) {
				t.Errorf("reasons %q, want one containing %q", v.Reasons, tt.text)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	eos := Judge(base(peaked(100, 2), 2))
	ws := Judge(base(peaked(100, 3), 3))
	padded := base(peaked(120, 7), 7)
	padded.VocabSize, padded.TokenizerSize = 128, 110
	pv := Judge(padded)
	for _, c := range []struct {
		v    Verdict
		text string
	}{{eos, "end-of-sequence"}, {ws, "whitespace only"}, {pv, "covers the tokenizer"}} {
		if !c.v.Pass || !strings.Contains(strings.Join(c.v.Warnings, "; "), c.text) {
			t.Errorf("want PASS with warning %q, got pass=%v reasons=%q warnings=%q", c.text, c.v.Pass, c.v.Reasons, c.v.Warnings)
		}
	}
}

func TestRepetition(t *testing.T) {
	if ok, _ := Repetition([]int{5, 6, 7, 8, 9, 9, 9, 9, 9, 9}); !ok {
		t.Error("a 1-token loop must be flagged")
	}
	if ok, _ := Repetition([]int{1, 2, 3, 4, 7, 8, 7, 8, 7, 8}); !ok {
		t.Error("a 2-token loop must be flagged")
	}
	if ok, msg := Repetition([]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}); ok {
		t.Errorf("no loop, got %q", msg)
	}
}

// The prompt's fit is judged on the worker's token count before the model
// loads (issue 36 item 3): the first decoded token comes from the prefill,
// so decode 8 needs 7 more positions.
func TestCheckPromptFits(t *testing.T) {
	for _, tc := range []struct {
		tokens, decode, maxSeq int
		given                  bool
		want                   string // "" fits
	}{
		{64, 0, 64, true, ""},
		{64, 1, 64, true, ""},
		{57, 8, 64, false, ""},
		{65, 0, 64, true, "the prompt given has 65 tokens with this model's tokenizer, and max_seq is 64"},
		{58, 8, 64, false, "the canonical prompt has 58 tokens with this model's tokenizer plus 7 decoded, and max_seq is 64"},
	} {
		err := CheckPromptFits(tc.tokens, tc.decode, tc.maxSeq, tc.given)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !errors.Is(err, ErrPromptTooLong) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v; want %q", tc, err, tc.want)
		}
	}
}
