package quant

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"phase0/gate/verdict"
	"phase0/read/tensornames"
	"phase0/wire"
)

// Weights is quantized gate 1: every tensor of every layer the folder's
// own loader returned, judged against the source checkpoint.
type Weights struct {
	verdict.Section
	Format  string          `json:"format"`
	Loader  string          `json:"loader"`
	Limits  Limits          `json:"limits"`
	Bound   wire.QuantBound `json:"bound"`
	Layers  int             `json:"layers"`
	Judged  int             `json:"tensors_judged"`
	Kept    int             `json:"tensors_kept_bf16"`
	Rows    []Row           `json:"rows"`
	Weakest *Row            `json:"weakest,omitempty"` // the quantized tensor with the lowest cosine
	// Closeness is layer 0 against the key's reference and the other
	// cached candidate checkpoints (for the pairing check).
	Closeness []Closeness `json:"closeness,omitempty"`
}

// Row is one tensor's result.
type Row struct {
	Layer     int            `json:"layer"`
	Tensor    string         `json:"tensor"`
	Reference string         `json:"reference,omitempty"` // the reference tensor it was judged against
	Status    verdict.Status `json:"status"`
	Metrics   *Metrics       `json:"metrics,omitempty"`
	Differing *int64         `json:"differing,omitempty"`
}

// Expect is what the reference's config says the loader must return.
type Expect struct {
	NLayers int
	QKNorm  bool
	QKVBias bool
	// Family is a deployed family's name (tensornames.FamilyAdditions: its extra
	// kept tensors, fused reference tensors, conventions); "" otherwise.
	Family string
}

// Judge judges the worker's facts for a folder of format f.
func Judge(f Format, facts *wire.QuantFactsResult, want Expect) *Weights {
	w := &Weights{Section: verdict.NewSection(), Format: f.Name(), Loader: facts.Loader, Limits: f.Limits(), Bound: f.Bound(), Layers: facts.LayersLoaded, Rows: []Row{}}
	lim := w.Limits
	seen := map[string]bool{}
	for _, t := range facts.Tensors {
		name := tensorName(t.Layer, t.Field)
		seen[name] = true
		row := Row{Layer: t.Layer, Tensor: t.Field, Reference: t.Reference, Status: verdict.Pass, Differing: t.Differing}
		fail := func(format string, args ...any) {
			row.Status = verdict.Fail
			w.FailWith("%s (%s): "+format, append([]any{name, t.Reference}, args...)...)
		}
		quantized := tensornames.IsProjection(t.Field) || (t.Field == "lm_head" && t.Stats != nil && t.Differing == nil)
		switch {
		case t.Problem != "":
			fail("%s", t.Problem)
			if c, ok := t.Confusions[ConfTransposed]; ok && cosine(c) > 0.9 {
				w.Find("%s: likely cause: transposed — the loader returned (out, in) %v where (in, out) is expected (cosine %.4f with the reference as stored)", name, t.Shape, cosine(c))
			}
		case quantized && t.Stats == nil:
			if c, ok := t.Confusions[ConfTransposed]; ok {
				fail("shape %v is the reference's own (out, in) layout, expected (in, out) %v; likely cause: transposed (cosine %.4f with the reference as stored)", t.Shape, reversed(t.ReferenceShape), cosine(c))
			} else {
				fail("no statistics returned")
			}
		case quantized:
			w.Judged++
			m := Of(*t.Stats)
			row.Metrics = &m
			if metric, value, limit, broken := beyondLimits(f, m, lim); broken {
				fail("%s %.4f, limit %s%s", metric, value, limit, cause(t, m, lim, f.Bound(), want.Family))
			}
			if w.Weakest == nil || m.Cosine < w.Weakest.Metrics.Cosine {
				r := row
				w.Weakest = &r
			}
		default:
			w.Kept++
			switch {
			case t.Differing == nil:
				fail("kept in bf16, yet no bitwise comparison was returned")
			case *t.Differing > 0 && t.Convention != "":
				fail("%s", conventionFailure(t))
			case *t.Differing > 0:
				detail := ""
				if t.Stats != nil {
					m := Of(*t.Stats)
					detail = fmt.Sprintf(" (max |diff| %.4g, cosine %.4f)", m.MaxAbsDiff, m.Cosine)
				}
				fail("kept in bf16 but %d of %d elements differ from the reference%s; expected byte-identical", *t.Differing, product(t.ReferenceShape), detail)
			}
		}
		w.Rows = append(w.Rows, row)
	}
	if facts.MissingKey != "" {
		// The loader stopped there: what it did not return is not judged.
		w.FailWith("%s: missing tensor — the bundle holds no such tensor: %s raised KeyError asking for it, so the tensors after it were not read (%d judged before it)",
			missingTensor(facts.MissingKey), w.Loader, len(facts.Tensors))
	} else {
		for _, name := range expected(want) {
			if !seen[name] {
				w.FailWith("%s: the loader returned no such tensor", name)
			}
		}
		if facts.LayersLoaded != want.NLayers {
			w.FailWith("the loader returned %d layers, the reference has %d", facts.LayersLoaded, want.NLayers)
		}
	}
	if facts.LoaderFallback != "" {
		// The module's own whole-model loader cannot run on its own (upstream's
		// newer qwen3_4b_q4nx: docs/quantized.md, "Where the loader comes
		// from"): the tensors are judged through its per-layer class, and
		// the broken function is named, never passed silently.
		w.Find("the module's whole-model loader cannot run on its own: %s", facts.LoaderFallback)
		w.Status = verdict.Worst(w.Status, verdict.Warn)
	}
	w.Summary = fmt.Sprintf("%s via %s: %d quantized tensors judged, %d kept bf16 tensors compared, %d layers", w.Format, w.Loader, w.Judged, w.Kept, w.Layers)
	if w.Weakest != nil {
		m := w.Weakest.Metrics
		w.Summary += fmt.Sprintf("; weakest %s cosine %.4f, rel L2 %.4f (limits %g, %g)", tensorName(w.Weakest.Layer, w.Weakest.Tensor), m.Cosine, m.RelL2, lim.MinCosine, lim.MaxRelL2)
	}
	return w
}

// beyondLimits is the first of a quantized tensor's metrics outside the
// format's limits, with its value and the limit, if any is.
func beyondLimits(f Format, m Metrics, lim Limits) (metric string, value float64, limit string, broken bool) {
	for _, c := range []struct {
		metric string
		value  float64
		bad    bool
		limit  string
	}{
		{"cosine", m.Cosine, m.Cosine < lim.MinCosine, fmt.Sprintf("≥ %g", lim.MinCosine)},
		{"relative L2", m.RelL2, m.RelL2 > lim.MaxRelL2, fmt.Sprintf("≤ %g", lim.MaxRelL2)},
		{"std ratio", m.StdRatio, m.StdRatio < lim.MinStdRatio || m.StdRatio > lim.MaxStdRatio, fmt.Sprintf("in [%g, %g]", lim.MinStdRatio, lim.MaxStdRatio)},
		{"fraction beyond the " + f.Name() + " error bound", m.BeyondBound, m.BeyondBound > lim.MaxBeyond, fmt.Sprintf("≤ %g", lim.MaxBeyond)},
		{"worst element's error in units of the " + f.Name() + " bound (max |error| " + fmt.Sprintf("%.4g", m.MaxAbsDiff) + ")", m.WorstExcess,
			lim.MaxExcess > 0 && m.WorstExcess > lim.MaxExcess, fmt.Sprintf("≤ %g", lim.MaxExcess)},
	} {
		if c.bad {
			return c.metric, c.value, c.limit, true
		}
	}
	return "", 0, "", false
}

// missingTensor is the tensor a loader's KeyError names: the key itself,
// or the last word of a message (upstream's bf16 loaders raise
// KeyError(f"Missing weight: {key}")).
func missingTensor(key string) string {
	if f := strings.Fields(key); len(f) > 1 {
		return strings.Trim(f[len(f)-1], "'\"`")
	}
	return key
}

// cause is what the numbers say went wrong, or "".
func cause(t wire.QuantTensor, m Metrics, lim Limits, bound wire.QuantBound, family string) string {
	conf := func(name string) float64 {
		if c, ok := t.Confusions[name]; ok {
			return cosine(c)
		}
		return math.NaN()
	}
	// A confusion explains the failure when the tensor matches it clearly
	// better than its own reference. Rows paired the wrong way keep their
	// own row's scale and min, so their match is strong but not exact
	// (cosine ≈ 0.87 on the tests' bundles).
	explains := func(c float64) bool { return c > 0.7 && c > m.Cosine+0.3 }
	switch p, tr, rp, off := conf(ConfPartner), conf(ConfTransposed), conf(ConfRowPairs), conf(ConfGroupOffset); {
	case explains(p) && fusedOrder(family, t.Field) != "":
		return fmt.Sprintf("; likely cause: %s (cosine %.4f with %s's rows of the fused reference)", fusedOrder(family, t.Field), p, tensornames.Partners[t.Field])
	case explains(p):
		return fmt.Sprintf("; likely cause: swapped with %s (cosine %.4f with %s's reference)", tensornames.Partners[t.Field], p, tensornames.Partners[t.Field])
	case explains(tr):
		return fmt.Sprintf("; likely cause: transposed (cosine %.4f with the reference as stored, (out, in))", tr)
	case explains(rp):
		return fmt.Sprintf("; likely cause: even and odd rows exchanged — the nibble order within a byte is reversed (cosine %.4f with the rows paired the other way)", rp)
	case t.Blocks != nil && t.Blocks.Moved > 0:
		b := t.Blocks
		return fmt.Sprintf("; likely cause: blocks out of order — the errors beyond the bound lie in %d of the %d %d×%d blocks, and %d of the %d compared hold another block's values",
			b.Beyond, b.Total, b.Rows, b.Cols, b.Moved, b.Checked)
	case t.Zeroed != nil:
		return zeroedCause(t, *t.Zeroed, bound)
	case m.StdRatio > 1.8 && m.StdRatio < 2.2:
		return fmt.Sprintf("; likely cause: doubled scale (std ratio %.3f ≈ 2)", m.StdRatio)
	case m.StdRatio > 0.45 && m.StdRatio < 0.55:
		return fmt.Sprintf("; likely cause: halved scale (std ratio %.3f ≈ 0.5)", m.StdRatio)
	// The values still follow the reference's (a cosine no random or
	// misplaced tensor has) at a spread the format does not allow.
	case (m.StdRatio < lim.MinStdRatio || m.StdRatio > lim.MaxStdRatio) && m.Cosine > 0.5:
		return fmt.Sprintf("; likely cause: a scale error — the values spread %.3f× the reference's (std ratio %.3f, outside [%g, %g]): a scale stored ≈ %.2f× what it should be",
			m.StdRatio, m.StdRatio, lim.MinStdRatio, lim.MaxStdRatio, m.StdRatio)
	// After the scale rules: a doubled I8 scale is 2w − min, which matches
	// once each group's mean is removed too (its std ratio ≈ 2 says which).
	case explains(off):
		return fmt.Sprintf("; likely cause: a codec mismatch — the values match the reference up to one offset per group (cosine %.4f once each group's mean is removed): "+
			"Q4NX-codec data (scale·(q − zp)) read as I8 (scale·q + min), or the reverse", off)
	case math.Abs(m.Cosine) < 0.2:
		return fmt.Sprintf("; likely cause: values unrelated to the reference — a random-init tensor or another model's (cosine %.4f)", m.Cosine)
	case m.Cosine >= lim.MinCosine && m.BeyondBound > lim.MaxBeyond && t.Stats != nil && offsetShare(*t.Stats) >= minOffsetShare:
		mean, sd := errorMoments(*t.Stats)
		return fmt.Sprintf("; likely cause: a constant offset — the errors share one mean, %+.4g (%.2f of their standard deviation %.4g, ≈ %+.2f of a quantization step if the rest is rounding): the mins (zero points) shifted",
			mean, math.Abs(mean)/sd, sd, mean/(math.Sqrt(12)*sd))
	case m.Cosine >= lim.MinCosine && m.BeyondBound > lim.MaxBeyond:
		return "; likely cause: errors larger than the format allows — a wrong codec (I8 vs Q4NX dequant) or a lossy repack"
	}
	return ""
}

// minOffsetShare is the |mean| / standard deviation of a tensor's errors
// from which they share one offset: rounding errors average out (on a
// clean pack 1/√N, under 0.004 for any real projection); a min shifted by
// a tenth of a step gives ≈ 0.35.
const minOffsetShare = 0.1

// errorMoments are the mean and standard deviation of the loader's errors
// (x − y) over the tensor, from the sums.
func errorMoments(s wire.QuantStats) (mean, sd float64) {
	if s.N == 0 {
		return 0, 0
	}
	n := float64(s.N)
	mean = (s.SumX - s.SumY) / n
	return mean, math.Sqrt(max(s.SumDD/n-mean*mean, 0))
}

// offsetShare is |mean| / sd of the errors (0 without any).
func offsetShare(s wire.QuantStats) float64 {
	mean, sd := errorMoments(s)
	if sd == 0 {
		return 0
	}
	return math.Abs(mean) / sd
}

// zeroedCause names the groups the loader returned as zeros: whole output
// rows (a zeroed scale and min) or groups within rows.
func zeroedCause(t wire.QuantTensor, z wire.QuantZeroed, bound wire.QuantBound) string {
	rows := 0
	if len(t.ReferenceShape) == 2 {
		rows = t.ReferenceShape[0]
	}
	span := fmt.Sprintf("row %d", z.FirstRow)
	if z.LastRow > z.FirstRow {
		span = fmt.Sprintf("rows %d–%d", z.FirstRow, z.LastRow)
	}
	if z.Rows > 0 && int64(z.Rows)*int64(groupsPerRow(t, bound)) == z.Groups {
		return fmt.Sprintf("; likely cause: zeroed rows — %d of the %d output rows (%s) are all zero where the reference's are not: their scales and mins zeroed", z.Rows, rows, span)
	}
	return fmt.Sprintf("; likely cause: zeroed values — %d groups of %d input elements (%d whole output rows) in output %s of %d are all zero where the reference's are not: their scales and mins zeroed",
		z.Groups, bound.Group, z.Rows, span, rows)
}

// groupsPerRow is the bound's groups in one output row of t.
func groupsPerRow(t wire.QuantTensor, bound wire.QuantBound) int {
	if len(t.ReferenceShape) != 2 || bound.Group <= 0 {
		return 0
	}
	return t.ReferenceShape[1] / bound.Group
}

// expected are the tensors every loader must return for the config.
func expected(want Expect) []string {
	out := []string{"embed_table", "final_norm", "lm_head"}
	for k := range want.NLayers {
		fields := append(tensornames.ProjectionFields(), "attn_norm", "ffn_norm")
		if want.QKNorm {
			fields = append(fields, "q_norm", "k_norm")
		}
		if want.QKVBias {
			fields = append(fields, "bq", "bk", "bv")
		}
		if fam, ok := tensornames.AdditionsOf(want.Family); ok {
			fields = append(fields, fam.KeptFields()...)
		}
		for _, f := range fields {
			out = append(out, tensorName(k, f))
		}
	}
	return out
}

func tensorName(layer int, field string) string {
	if layer < 0 {
		return field
	}
	return fmt.Sprintf("layer %d %s", layer, field)
}

func reversed(s []int) []int {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func product(s []int) int64 {
	n := int64(1)
	for _, d := range s {
		n *= int64(d)
	}
	return n
}

// CheckHeaderDTypes WARNs for each tensor kept in bf16 whose bytes, read as
// bf16 by the loader, equal the reference's bit for bit while the bundle's
// header (dtypes: tensor → dtype) gives it another 2-byte dtype: the
// folder's loader reads such a tensor as bf16 whatever the header says, so
// the deployment is unaffected, but the header lies to any other reader.
func (w *Weights) CheckHeaderDTypes(dtypes map[string]string) {
	for _, r := range w.Rows {
		if r.Status != verdict.Pass || r.Differing == nil || *r.Differing != 0 {
			continue
		}
		name := r.Reference
		d, ok := dtypes[name]
		if !ok {
			// A family's reference name (language_model.model.layers…,
			// model.language_model.layers…) is the bundle's from its last
			// "model." on.
			if i := strings.LastIndex(name, "model."); i > 0 {
				name = name[i:]
				d, ok = dtypes[name]
			}
		}
		if ok && d != "BF16" && (d == "F16" || d == "I16" || d == "U16") {
			w.Find("%s (%s): the bundle's header says %s, but its bytes are BF16 (read as bf16 they equal the reference's bit for bit); the folder's loader reads them as bf16 whatever the header says, a reader trusting the header would not",
				tensorName(r.Layer, r.Tensor), name, d)
			w.Status = verdict.Worst(w.Status, verdict.Warn)
		}
	}
}

// LoaderRaised is gate 1 when the folder's loader raised before any
// tensor could be judged: a FAIL whose one finding is why (one line).
func LoaderRaised(f Format, loader, why string) *Weights {
	w := &Weights{Section: verdict.NewSection(), Format: f.Name(), Loader: loader, Limits: f.Limits(), Rows: []Row{}}
	w.FailWith("%s", why)
	w.Summary = why
	return w
}
