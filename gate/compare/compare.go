package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"phase0/gate/reference"
	"phase0/gate/verdict"
)

// Result is `phase0 compare`'s one object.
type Result struct {
	Tool      string         `json:"tool"`
	Command   string         `json:"command"`
	Reference string         `json:"reference"`
	Candidate string         `json:"candidate"`
	Status    verdict.Status `json:"status"`
	Summary   string         `json:"summary"`
	Error     string         `json:"error,omitempty"`
	// Who recorded each side (runner, dtype) as their metadata says.
	ReferenceRunner string  `json:"reference_runner,omitempty"`
	CandidateRunner string  `json:"candidate_runner,omitempty"`
	Checks          []Check `json:"prompts"`
	// Layers is the diagnosis table: informational, never part of Status.
	Layers  []Layer `json:"layers"`
	Seconds float64 `json:"seconds"`
}

// ExitCode is 0 pass, 1 a prompt failed the gate, 2 could not compare.
func (r *Result) ExitCode() int { return r.Status.ExitCode() }

// newResult is an empty Result for the two folders.
func newResult(refDir, candDir string) *Result {
	return &Result{Tool: "phase0", Command: "compare", Reference: refDir, Candidate: candDir, Checks: []Check{}, Layers: []Layer{}}
}

// Unrun is the Result of a compare that could not start (a usage error,
// err): status ERROR, in compare's own shape.
func Unrun(refDir, candDir string, err error) *Result { return newResult(refDir, candDir).fail(err) }

// Files reads both recordings and compares them.
func Files(refDir, candDir string) *Result {
	r := newResult(refDir, candDir)
	ref, err := reference.Read(refDir)
	if err != nil {
		return r.fail(fmt.Errorf("reference: %w", err))
	}
	cand, err := reference.Read(candDir)
	if err != nil {
		return r.fail(fmt.Errorf("candidate: %w", err))
	}
	return Recordings(r, ref, cand)
}

func (r *Result) fail(err error) *Result {
	r.Status, r.Error, r.Summary = verdict.Error, err.Error(), "could not compare: "+err.Error()
	return r
}

// Recordings fills r with the comparison of two read recordings.
func Recordings(r *Result, ref, cand *reference.Recording) *Result {
	r.ReferenceRunner, r.CandidateRunner = runnerLabel(&ref.Meta), runnerLabel(&cand.Meta)
	if err := comparable(&ref.Meta, &cand.Meta, ref, cand); err != nil {
		return r.fail(err)
	}
	r.Status = verdict.Pass
	var failed []string
	for i := range ref.Prompts {
		rp, cp := ref.Prompts[i], cand.Prompts[i]
		c, err := Lockstep(Sequence{rp.Chosen, rp.TopKIDs, rp.Nonfinite}, Sequence{cp.Chosen, cp.TopKIDs, cp.Nonfinite}, ref.Meta.TopK)
		if err != nil {
			return r.fail(fmt.Errorf("prompt %d %q: %w", i, rp.Text, err))
		}
		c.Prompt, c.Text = i, rp.Text
		if c.Status == verdict.Fail {
			r.Status = verdict.Fail
			failed = append(failed, fmt.Sprintf("prompt %d (%s)", i, c.Reason))
		}
		r.Checks = append(r.Checks, c)
	}
	r.Layers = Table(ref.Probes, cand.Probes)
	if r.Status == verdict.Fail {
		r.Summary = fmt.Sprintf("%d of %d prompts fail the top-%d gate; first: %s", len(failed), len(r.Checks), ref.Meta.TopK, failed[0])
	} else {
		div := 0
		for _, c := range r.Checks {
			if c.Divergent != nil {
				div++
			}
		}
		r.Summary = fmt.Sprintf("%d prompts × %d steps: %d identical, %d diverge inside the top-%d", len(r.Checks), ref.Meta.DecodeSteps, len(r.Checks)-div, div, ref.Meta.TopK)
	}
	return r
}

// comparable refuses pairs the gate would compare meaninglessly: another
// tokenizer, other prompts or token ids, another step count or k.
func comparable(rm, cm *reference.Meta, ref, cand *reference.Recording) error {
	var errs []error
	if rm.TokenizerSHA256 != cm.TokenizerSHA256 {
		errs = append(errs, fmt.Errorf("tokenizer checksum %s in the reference, %s in the candidate", rm.TokenizerSHA256, cm.TokenizerSHA256))
	}
	if !slices.Equal(rm.Prompts, cm.Prompts) {
		errs = append(errs, fmt.Errorf("prompts differ: reference %q, candidate %q", rm.Prompts, cm.Prompts))
	} else {
		for i := range ref.Prompts {
			if !slices.Equal(ref.Prompts[i].Tokens, cand.Prompts[i].Tokens) {
				errs = append(errs, fmt.Errorf("prompt %d token ids differ: reference %v, candidate %v", i, ref.Prompts[i].Tokens, cand.Prompts[i].Tokens))
			}
		}
	}
	if rm.DecodeSteps != cm.DecodeSteps || rm.TopK != cm.TopK {
		errs = append(errs, fmt.Errorf("reference has %d steps of top-%d, candidate %d steps of top-%d", rm.DecodeSteps, rm.TopK, cm.DecodeSteps, cm.TopK))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrMismatch, errors.Join(errs...))
	}
	return nil
}

// Layer is one row of the diagnosis table: per-position cosine aggregated,
// and element-wise errors, as upstream's compare_pair computes them.
type Layer struct {
	Name      string `json:"name"`
	Layer     *int   `json:"layer"`
	Positions int    `json:"positions"`
	CosMin    Num    `json:"cosine_min"`
	CosP5     Num    `json:"cosine_p5"`
	CosMedian Num    `json:"cosine_median"`
	CosMean   Num    `json:"cosine_mean"`
	MaxAbs    Num    `json:"max_abs"`
	MeanAbs   Num    `json:"mean_abs"`
	MaxRel    Num    `json:"max_rel"`
	MeanRel   Num    `json:"mean_rel"`
	Note      string `json:"note,omitempty"`
}

// Table pairs the probes by name and layer. A probe only one side has, or
// with another shape, gets a row with a note instead of numbers.
func Table(ref, cand []reference.Probe) []Layer {
	out := []Layer{}
	for _, rp := range ref {
		row := Layer{Name: rp.Name}
		if rp.Layer >= 0 {
			row.Layer = ptr(rp.Layer)
		}
		i := slices.IndexFunc(cand, func(c reference.Probe) bool { return c.Name == rp.Name && c.Layer == rp.Layer })
		switch {
		case i < 0:
			row.Note = "candidate has no such probe"
		case !slices.Equal(rp.Shape, cand[i].Shape):
			row.Note = fmt.Sprintf("shape %v in the reference, %v in the candidate", rp.Shape, cand[i].Shape)
		default:
			fill(&row, rp, cand[i].Data)
		}
		out = append(out, row)
	}
	return out
}

// fill computes the row. The position axis is the first one (a 1-D tensor is
// one position); a zero-norm position has cosine 0, as upstream does.
func fill(row *Layer, rp reference.Probe, cand []float32) {
	pos := 1
	if len(rp.Shape) > 1 {
		pos = int(rp.Shape[0])
	}
	if pos == 0 || len(rp.Data) == 0 {
		row.Note = "empty"
		return
	}
	width := len(rp.Data) / pos
	cos := make([]float64, pos)
	var sumAbs, sumRel, maxAbs, maxRel float64
	for p := range pos {
		var dot, na, nb float64
		for j := p * width; j < (p+1)*width; j++ {
			a, b := float64(cand[j]), float64(rp.Data[j])
			dot, na, nb = dot+a*b, na+a*a, nb+b*b
			d := math.Abs(a - b)
			rel := d / math.Max(math.Abs(b), 1e-6)
			maxAbs, maxRel = nanMax(maxAbs, d), nanMax(maxRel, rel)
			sumAbs, sumRel = sumAbs+d, sumRel+rel
		}
		if den := math.Sqrt(na) * math.Sqrt(nb); den > 0 {
			cos[p] = dot / den
		}
	}
	row.Positions = pos
	row.MaxAbs, row.MaxRel = Num(maxAbs), Num(maxRel)
	row.MeanAbs, row.MeanRel = Num(sumAbs/float64(len(rp.Data))), Num(sumRel/float64(len(rp.Data)))
	sorted := slices.Clone(cos)
	slices.Sort(sorted)
	var sum float64
	for _, c := range cos {
		sum += c
	}
	row.CosMin, row.CosMean = Num(sorted[0]), Num(sum/float64(pos))
	row.CosP5, row.CosMedian = Num(percentile(sorted, 5)), Num(percentile(sorted, 50))
}

// nanMax keeps NaN once seen, so a NaN in the candidate shows in the table.
func nanMax(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return math.Max(a, b)
}

// percentile interpolates linearly between closest ranks (NumPy's default).
func percentile(sorted []float64, q float64) float64 {
	x := q / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(x))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (sorted[hi]-sorted[lo])*(x-float64(lo))
}

// Num is a float that encodes NaN and ±Inf as JSON null (JSON has no NaN).
type Num float64

// MarshalJSON writes null for a non-finite value.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// runnerLabel is the runner as its metadata names it, with the dtype when the name lacks it.
func runnerLabel(m *reference.Meta) string {
	if m.Dtype == "" || strings.Contains(m.Runner, m.Dtype) {
		return m.Runner
	}
	return m.Runner + " " + m.Dtype
}
