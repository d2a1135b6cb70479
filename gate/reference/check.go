package reference

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The checks below refuse what no recorder writes. compare reads the values
// as they are: a negative non-finite count would pass as finite logits, a
// +Inf log-probability beside a count of 0 contradicts itself, a negative id
// names no token, and a tensor the format does not define would be ignored in
// silence. Such a recording was edited or written by something else, so it
// is not judged (compare exits 2).

// promptFields are the tensors each prompt.<i> has, in the format's order.
var promptFields = []string{"tokens", "chosen", "topk_ids", "topk_logprobs", "nonfinite"}

// maxNamed bounds how many unknown tensors one message lists.
const maxNamed = 5

// checkNames refuses every tensor the format does not define for nPrompts
// prompts (and, when the metadata says, nLayers layers).
func (tr tensorReader) checkNames(nPrompts, nLayers int) error {
	var unknown []string
	for name := range tr.byName {
		if !defined(name, nPrompts, nLayers) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	named := strings.Join(unknown[:min(len(unknown), maxNamed)], ", ")
	if len(unknown) > maxNamed {
		named += fmt.Sprintf(" and %d more", len(unknown)-maxNamed)
	}
	subject := "tensor " + named + " is"
	if len(unknown) > 1 {
		subject = "tensors " + named + " are"
	}
	layers := "diagnosis.layer.<l>." + layerProbe
	if nLayers > 0 {
		layers += fmt.Sprintf(" (l < n_layers %d)", nLayers)
	}
	return formatErr(tr.path, "%s not part of the format: it defines prompt.<i>.{%s} (i < %d prompts), %s, diagnosis.final_hidden_normed and diagnosis.logits",
		subject, strings.Join(promptFields, ","), nPrompts, layers)
}

func defined(name string, nPrompts, nLayers int) bool {
	switch name {
	case "diagnosis.final_hidden_normed", "diagnosis.logits":
		return true
	}
	if rest, ok := strings.CutPrefix(name, "prompt."); ok {
		num, field, _ := strings.Cut(rest, ".")
		i, ok := index(num)
		return ok && i < nPrompts && slices.Contains(promptFields, field)
	}
	if rest, ok := strings.CutPrefix(name, "diagnosis.layer."); ok {
		num, probe, _ := strings.Cut(rest, ".")
		l, ok := index(num)
		return ok && probe == layerProbe && (nLayers <= 0 || l < nLayers)
	}
	return false
}

// index parses an index written as the recorder writes it (decimal, no sign,
// no leading zero), so no two names denote the same tensor.
func index(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0 && strconv.Itoa(n) == s
}

// checkValues refuses prompt i's values that no recorder writes.
func checkValues(path string, i int, p *Prompt) error {
	name := func(field string) string { return "prompt." + strconv.Itoa(i) + "." + field }
	for _, ids := range []struct {
		field string
		ids   []int64
	}{{"tokens", p.Tokens}, {"chosen", p.Chosen}} {
		if j := slices.IndexFunc(ids.ids, negative); j >= 0 {
			return formatErr(path, "tensor %s[%d] is %d: a token id, want >= 0", name(ids.field), j, ids.ids[j])
		}
	}
	for s, row := range p.TopKIDs {
		if j := slices.IndexFunc(row, negative); j >= 0 {
			return formatErr(path, "tensor %s[%d][%d] is %d: a token id, want >= 0", name("topk_ids"), s, j, row[j])
		}
	}
	for s, n := range p.Nonfinite {
		if n < 0 {
			return formatErr(path, "tensor %s[%d] is %d: a count of non-finite logits, want >= 0", name("nonfinite"), s, n)
		}
		if n > 0 {
			continue // the recorder writes NaN log-probabilities for such a step
		}
		for j, lp := range p.TopKLogprobs[s] {
			if f := float64(lp); math.IsNaN(f) || math.IsInf(f, 0) || f > 0 {
				return formatErr(path, "tensor %s[%d][%d] is %v while %s[%d] is 0: the log-probability of finite logits is finite and <= 0",
					name("topk_logprobs"), s, j, lp, name("nonfinite"), s)
			}
		}
	}
	return nil
}

func negative(x int64) bool { return x < 0 }
