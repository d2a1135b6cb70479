// Package weights is gate 1 on the native side: it diffs the tensors a config
// implies against a safetensors inventory, and cross-checks the config against
// what the tensor shapes say.
package weights

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"phase0/model"
	"phase0/safetensors"
)

// Status values shared by every gate in the report.
const (
	StatusPass = "PASS"
	StatusFail = "FAIL"
	StatusSkip = "SKIPPED"
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

// Result is gates.weights in the report.
type Result struct {
	Status     string      `json:"status"`
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
	return &Result{Status: StatusPass, Files: []string{}, Missing: []string{}, Unexpected: []string{}, Harmless: []string{},
		Mismatched: []Mismatch{}, NonFinite: []NonFinite{}, Errors: []string{}, Warnings: []string{}}
}

// Check diffs the expected tensor set against the inventory, both ways.
func Check(cfg *model.Config, inv *safetensors.Inventory) *Result {
	res := NewResult()
	res.Tensors = len(inv.Tensors)
	res.Bytes = inv.TotalBytes
	res.Files = append(res.Files, inv.Files...)
	expected := model.ExpectedTensors(cfg)
	want := make(map[string]bool, len(expected))

	wantDType, ok := torchToSafetensors[cfg.DType]
	if !ok {
		wantDType = "BF16"
	}
	res.DType = wantDType
	seenDTypes := map[string]int{}
	for _, spec := range expected {
		want[spec.Name] = true
		t, ok := inv.Tensors[spec.Name]
		if !ok {
			res.Missing = append(res.Missing, spec.Name)
			continue
		}
		if !equalShape(t.Shape, spec.Shape) {
			res.Mismatched = append(res.Mismatched, Mismatch{Name: spec.Name, Expected: "shape " + shapeString(spec.Shape), Actual: "shape " + shapeString(t.Shape)})
		}
		seenDTypes[t.DType]++
		if !floatDTypes[t.DType] {
			res.Mismatched = append(res.Mismatched, Mismatch{Name: spec.Name, Expected: "dtype " + wantDType, Actual: "dtype " + t.DType + " (quantized or integer weights cannot feed the bf16 pipeline)"})
		}
	}
	for _, name := range inv.Names() {
		if want[name] {
			continue
		}
		if harmless.MatchString(name) {
			res.Harmless = append(res.Harmless, name)
		} else {
			res.Unexpected = append(res.Unexpected, name)
		}
	}
	for dt, n := range seenDTypes {
		if floatDTypes[dt] && dt != wantDType {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%d tensors are %s while config.json says %s: the loader converts them to bf16", n, dt, wantDType))
		}
	}
	sort.Strings(res.Warnings)
	res.settle()
	return res
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

func (r *Result) settle() {
	if len(r.Missing)+len(r.Unexpected)+len(r.Mismatched)+len(r.NonFinite)+len(r.Errors) > 0 {
		r.Status = StatusFail
	} else {
		r.Status = StatusPass
	}
}

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func shapeString(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
