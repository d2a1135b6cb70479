// Package weights is gate 1 on the native side: it diffs the tensors a config
// implies against a safetensors inventory, and cross-checks the config against
// what the tensor shapes say.
package weights

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"phase0/gate/verdict"
	"phase0/read/model"
	"phase0/read/safetensors"
)

// Mismatch is a tensor whose shape or dtype differs from what the config implies.
type Mismatch struct {
	Name     string `json:"name"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
}

// NonFinite counts NaN and ±Inf values in one tensor (filled by --scan).
type NonFinite struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
	NaN   int64  `json:"nan"`
	Inf   int64  `json:"inf"`
}

// Result is gates.weights in the report. Name lists are capped at
// verdict.MaxFindings entries; the *_total fields count them all.
type Result struct {
	verdict.Section
	Tensors    int         `json:"tensors"`
	Bytes      int64       `json:"bytes"`
	Files      []string    `json:"files"`
	DType      string      `json:"dtype"`
	Missing    []string    `json:"missing"`
	Unexpected []string    `json:"unexpected"`
	Harmless   []string    `json:"harmless_extras"`
	Mismatched []Mismatch  `json:"mismatched"`
	NonFinite  []NonFinite `json:"nonfinite"`
	Scanned    bool        `json:"scanned"`
	Errors     []string    `json:"errors"`
	Warnings   []string    `json:"warnings"`

	MissingTotal    int `json:"missing_total"`
	UnexpectedTotal int `json:"unexpected_total"`
	MismatchedTotal int `json:"mismatched_total"`
}

// harmless are tensors some checkpoints carry that no loader needs.
var harmless = regexp.MustCompile(`^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$`)

// floatDTypes are the safetensors dtypes the bf16 loader can take as they are.
var floatDTypes = map[string]bool{"BF16": true, "F16": true, "F32": true}

// torchToSafetensors maps config.json's dtype names to safetensors dtypes.
var torchToSafetensors = map[string]string{"bfloat16": "BF16", "float16": "F16", "float32": "F32"}

// NewResult returns an empty, passing result with non-nil lists, so the JSON
// report always shows [] rather than null.
func NewResult() *Result {
	return &Result{Section: verdict.NewSection(), Files: []string{}, Missing: []string{}, Unexpected: []string{}, Harmless: []string{},
		Mismatched: []Mismatch{}, NonFinite: []NonFinite{}, Errors: []string{}, Warnings: []string{}}
}

// Check diffs the expected tensor set against the inventory, both ways.
func Check(cfg *model.Config, inv *safetensors.Inventory) *Result {
	res := NewResult()
	res.Tensors = inv.Len()
	res.Bytes = inv.TotalBytes
	res.Files = append(res.Files, inv.Files...)
	expected := model.ExpectedSet(cfg)

	wantDType, ok := torchToSafetensors[cfg.DType]
	if !ok {
		wantDType = "BF16"
	}
	res.DType = wantDType
	// One walk over the inventory, each name placed in the expected set
	// without writing the expected names out; a checkpoint holds one dtype
	// or two, so they are counted in a short list rather than a map.
	type dtypeCount struct {
		dtype string
		n     int
	}
	var seenDTypes []dtypeCount
	type placed struct {
		at int // position in the expected set: findings keep its order
		m  Mismatch
	}
	var mismatched []placed
	var extra []string
	found := make([]bool, expected.Len())
	tensors := inv.Tensors()
	for k := range tensors {
		t := &tensors[k]
		at, ok := expected.Find(t.Name)
		if !ok {
			extra = append(extra, t.Name)
			continue
		}
		found[at] = true // names are unique in both, so each position once
		if want := expected.Shape(at); !slices.Equal(t.Shape, want) {
			mismatched = append(mismatched, placed{at, Mismatch{Name: t.Name, Expected: "shape " + shapeString(want), Actual: "shape " + shapeString(t.Shape)}})
		}
		if i := slices.IndexFunc(seenDTypes, func(c dtypeCount) bool { return c.dtype == t.DType }); i >= 0 {
			seenDTypes[i].n++
		} else {
			seenDTypes = append(seenDTypes, dtypeCount{t.DType, 1})
		}
		if !floatDTypes[t.DType] {
			mismatched = append(mismatched, placed{at, Mismatch{Name: t.Name, Expected: "dtype " + wantDType, Actual: "dtype " + t.DType + " (quantized or integer weights cannot feed the bf16 pipeline)"}})
		}
	}
	for at, ok := range found {
		if !ok {
			res.Missing = append(res.Missing, expected.Spec(at).Name)
		}
	}
	slices.SortStableFunc(mismatched, func(a, b placed) int { return a.at - b.at })
	for _, p := range mismatched {
		res.Mismatched = append(res.Mismatched, p.m)
	}
	for _, name := range extra {
		// A tied config whose checkpoint also stores lm_head.weight is judged
		// by the consistency gate, which compares its bytes with the embeddings.
		if harmless.MatchString(name) || (cfg.TieWordEmbeddings && name == "lm_head.weight") {
			res.Harmless = append(res.Harmless, name)
		} else {
			res.Unexpected = append(res.Unexpected, name)
		}
	}
	slices.Sort(res.Harmless)
	slices.Sort(res.Unexpected)
	for _, c := range seenDTypes {
		dt, n := c.dtype, c.n
		if floatDTypes[dt] && dt != wantDType {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%d tensors are %s while config.json says %s: the loader converts them to bf16", n, dt, wantDType))
		}
	}
	sort.Strings(res.Warnings)
	res.MissingTotal, res.UnexpectedTotal, res.MismatchedTotal = len(res.Missing), len(res.Unexpected), len(res.Mismatched)
	res.Missing, res.Unexpected, res.Mismatched = capped(res.Missing), capped(res.Unexpected), capped(res.Mismatched)
	res.settle()
	return res
}

// Clone is a copy that shares nothing with r: a later stage (the scan)
// completes the copy and leaves r as the earlier stage judged it.
func (r *Result) Clone() *Result {
	out := *r
	out.Findings = slices.Clone(r.Findings)
	out.Files, out.Missing, out.Unexpected, out.Harmless = slices.Clone(r.Files), slices.Clone(r.Missing), slices.Clone(r.Unexpected), slices.Clone(r.Harmless)
	out.Mismatched, out.NonFinite = slices.Clone(r.Mismatched), slices.Clone(r.NonFinite)
	out.Errors, out.Warnings = slices.Clone(r.Errors), slices.Clone(r.Warnings)
	return &out
}

// AddNonFinite records scan findings and re-decides the status.
func (r *Result) AddNonFinite(found []NonFinite) {
	r.Scanned = true
	r.NonFinite = append(r.NonFinite, found...)
	r.settle()
}

// Fail records an error that stopped the gate (an unreadable checkpoint).
func (r *Result) Fail(err error) {
	r.Errors = append(r.Errors, err.Error())
	r.settle()
}

// settle caps the lists, writes the findings and summary, and decides the status.
func (r *Result) settle() {
	sec := verdict.NewSection()
	for _, e := range r.Errors {
		sec.FailWith("%s", e)
	}
	for _, m := range r.Missing {
		sec.FailWith("missing tensor %s", m)
	}
	for _, m := range r.Unexpected {
		sec.FailWith("unexpected tensor %s", m)
	}
	for _, m := range r.Mismatched {
		sec.FailWith("%s: expected %s, found %s", m.Name, m.Expected, m.Actual)
	}
	for _, n := range r.NonFinite {
		sec.FailWith("%s: %d NaN, %d Inf", n.Name, n.NaN, n.Inf)
	}
	sec.Omitted += r.MissingTotal + r.UnexpectedTotal + r.MismatchedTotal - len(r.Missing) - len(r.Unexpected) - len(r.Mismatched)
	if r.MissingTotal+r.UnexpectedTotal+r.MismatchedTotal > 0 {
		sec.Status = verdict.Fail
	}
	sec.Summary = fmt.Sprintf("%d tensors, %d missing, %d unexpected, %d mismatched", r.Tensors, r.MissingTotal, r.UnexpectedTotal, r.MismatchedTotal)
	if r.Scanned {
		sec.Summary += fmt.Sprintf(", %d with NaN/Inf", len(r.NonFinite))
	}
	if len(r.Errors) > 0 {
		sec.Summary = r.Errors[0]
	}
	r.Section = sec
}

// capped keeps the first verdict.MaxFindings entries of a list.
func capped[T any](list []T) []T {
	if len(list) > verdict.MaxFindings {
		return list[:verdict.MaxFindings]
	}
	return list
}

func shapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
