package baseline

import (
	"math"
	"strings"
	"testing"
)

func nlls(xs ...float64) []*float64 {
	out := make([]*float64, len(xs))
	for i := range xs {
		out[i] = &xs[i]
	}
	return out
}

func TestPerplexity(t *testing.T) {
	ln := math.Log
	for _, tc := range []struct {
		name     string
		in       PassageInput
		wantPPL  float64
		wantPass bool
		reason   string
	}{
		{"trained", PassageInput{Tokens: []int{1, 2, 3}, NLL: nlls(ln(10), ln(40)), VocabSize: 49152}, 20, true, ""},
		{"at the limit passes", PassageInput{Tokens: []int{1, 2}, NLL: nlls(ln(4915.2)), VocabSize: 49152}, 4915.2, true, ""},
		{"random", PassageInput{Tokens: []int{1, 2, 3}, NLL: nlls(ln(45928), ln(45928)), VocabSize: 49152}, 45928, false, "perplexity 4.593e+04 exceeds the limit 4915 (0.1 × vocab_size 49152; ratio 0.934)"},
		{"configured ratio", PassageInput{Tokens: []int{1, 2}, NLL: nlls(ln(60)), VocabSize: 512, MaxRatio: 0.2}, 60, true, ""},
		{"configured ratio fails", PassageInput{Tokens: []int{1, 2}, NLL: nlls(ln(60)), VocabSize: 512, MaxRatio: 0.1}, 60, false, "exceeds the limit 51.2"},
		{"overflow clamps", PassageInput{Tokens: []int{1, 2}, NLL: nlls(1000), VocabSize: 512}, math.MaxFloat64, false, "exceeds the limit"},
		{"not finite", PassageInput{Tokens: []int{1, 2, 3}, NLL: []*float64{nil, nlls(1)[0]}, VocabSize: 512}, 0, false, "1 of 2 token log-likelihoods are not finite"},
		{"no nll", PassageInput{Tokens: []int{1}, VocabSize: 512}, 0, false, "no token log-likelihoods for 1 passage tokens"},
		{"no vocab", PassageInput{Tokens: []int{1, 2}, NLL: nlls(1)}, 0, false, "vocab_size 0 is not positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, reason := Perplexity(tc.in)
			if c.Pass != tc.wantPass || (reason == "") != tc.wantPass {
				t.Fatalf("pass %v reason %q, want pass %v", c.Pass, reason, tc.wantPass)
			}
			if !strings.Contains(reason, tc.reason) {
				t.Errorf("reason %q does not contain %q", reason, tc.reason)
			}
			if math.Abs(c.Perplexity-tc.wantPPL) > 1e-6*tc.wantPPL {
				t.Errorf("perplexity %g, want %g", c.Perplexity, tc.wantPPL)
			}
			if c.Tokens != len(tc.in.Tokens) || c.Predicted != len(tc.in.NLL) {
				t.Errorf("tokens %d predicted %d", c.Tokens, c.Predicted)
			}
			if tc.in.VocabSize > 0 && c.Perplexity > 0 && math.Abs(c.Ratio-c.Perplexity/float64(tc.in.VocabSize)) > 1e-12*c.Ratio {
				t.Errorf("ratio %g, want perplexity/V", c.Ratio)
			}
		})
	}
}
