package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"

	"phase0/internal/stformat"
	"phase0/read/model"
	"phase0/read/safetensors"
	"phase0/wire"
)

// SourceBehaviour marks findings about what the module does (its RoPE
// table, its helpers' RMSNorm, its loader's lm_head) rather than what its
// Config says.
const SourceBehaviour = "behaviour"

// Behaviour is the worker's behaviour facts with their float32 payload
// split into the arrays they describe.
type Behaviour struct {
	wire.BehaviourFacts

	arrays map[string]Array
}

// Array is one named part of the payload.
type Array struct {
	Shape []int64
	Data  []float32
}

// ErrBadBehaviour is wrapped when the behaviour facts do not decode or do
// not describe their payload.
var ErrBadBehaviour = errors.New("malformed behaviour facts")

// DecodeBehaviour decodes the facts strictly (an unknown field is a renamed
// one) and splits payload by their array specs, which must cover it exactly.
func DecodeBehaviour(raw []byte, payload []float32) (*Behaviour, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var b Behaviour
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadBehaviour, err)
	}
	b.arrays = map[string]Array{}
	at := 0
	for _, spec := range b.Arrays {
		n := 1
		for _, d := range spec.Shape {
			if d < 0 || d > int64(len(payload)) {
				return nil, fmt.Errorf("%w: array %s has shape %v, larger than the %d floats received", ErrBadBehaviour, spec.Name, spec.Shape, len(payload))
			}
			n *= int(d)
			if n > len(payload) {
				return nil, fmt.Errorf("%w: array %s has shape %v, larger than the %d floats received", ErrBadBehaviour, spec.Name, spec.Shape, len(payload))
			}
		}
		if _, dup := b.arrays[spec.Name]; dup {
			return nil, fmt.Errorf("%w: array %s is described twice", ErrBadBehaviour, spec.Name)
		}
		if at+n > len(payload) {
			return nil, fmt.Errorf("%w: arrays up to %s need %d floats, %d received", ErrBadBehaviour, spec.Name, at+n, len(payload))
		}
		b.arrays[spec.Name] = Array{Shape: spec.Shape, Data: payload[at : at+n : at+n]}
		at += n
	}
	if at != len(payload) {
		return nil, fmt.Errorf("%w: the arrays describe %d floats, %d received", ErrBadBehaviour, at, len(payload))
	}
	return &b, nil
}

// Array returns a named part of the payload.
func (b *Behaviour) Array(name string) (Array, bool) {
	a, ok := b.arrays[name]
	return a, ok
}

var (
	ropeFields = []string{"rope_base", "rope_scaling"}
	tieField   = []string{"tie_word_embeddings"}
)

// ropeStep is one bf16 step for the largest entries of a cos/sin table
// (values in [0.5, 1) are 2^-8 apart). Error is measured in this absolute
// unit: what a rotation loses does not depend on how small the entry is,
// and two correct tables (float64 vs float32 angles) differ by at most one.
const ropeStep = 1.0 / 256

// normTolerance is the largest relative error of a helper's RMSNorm that is
// still the same RMSNorm: a helper computing in bf16 stays near 4e-3; another
// eps on the probe is off by tens of percent.
const normTolerance = 1e-2

// Behaviour judges what the module does: its RoPE table against
// transformers' rotary embedding for the checkpoint's config at every
// position up to max_seq, and its helpers' RMSNorm against transformers'
// with config.json's rms_norm_eps on a probe where eps matters. who names
// the module in findings.
func (c *Consistency) Behaviour(cfg *model.Config, b *Behaviour, who string) {
	c.source(SourceBehaviour)
	c.rope(cfg, b, who)
	c.norms(cfg, b)
}

// RopeBehaviour judges the module's RoPE table alone: a quantized
// deployment's module that defines generate_rope_lut but takes its norms
// from elsewhere (the fused decode) has no helpers to probe.
func (c *Consistency) RopeBehaviour(cfg *model.Config, b *Behaviour, who string) {
	c.source(SourceBehaviour)
	c.rope(cfg, b, who)
}

func (c *Consistency) fail(field string, config, actual any, format string, args ...any) {
	c.add(Finding{Field: field, Source: SourceBehaviour, Config: config, Actual: actual, Message: fmt.Sprintf(format, args...)})
}

// judged notes a passing behaviour check when it is what decided a field
// the module's Config lacks (once per field), or when always is set
// (worth reading anyway); a check that merely agrees stays a Checked entry.
func (c *Consistency) judged(fields []string, always bool, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	var absent []string
	for _, f := range fields {
		if why, ok := c.absent[f]; ok {
			absent = append(absent, why)
			delete(c.absent, f)
		}
	}
	switch {
	case len(absent) > 0:
		c.Notes = append(c.Notes, strings.Join(absent, "; ")+": judged by what the module does: "+text)
	case always:
		c.Notes = append(c.Notes, text)
	}
}

// tableDiff compares two tables in bf16, each value rounded as production
// rounds it (.astype(bfloat16)).
type tableDiff struct {
	differing int     // elements whose bf16 values differ
	maxErr    float64 // largest absolute difference (+Inf for a NaN on one side)
	first     int     // first element more than one step off, -1 if none
}

func diffTables(got, want []float32) tableDiff {
	d := tableDiff{first: -1}
	for i := range got {
		a, b := bf16(got[i]), bf16(want[i])
		e := math.Abs(a - b)
		if math.IsNaN(a) || math.IsNaN(b) {
			e = math.Inf(1)
			if math.IsNaN(a) && math.IsNaN(b) {
				e = 0
			}
		}
		if e > 0 {
			d.differing++
		}
		if e > d.maxErr {
			d.maxErr = e
		}
		if e > ropeStep && d.first < 0 {
			d.first = i
		}
	}
	return d
}

func bf16(f float32) float64 { return float64(stformat.BF16Float32(stformat.RoundBF16(f))) }

func (c *Consistency) rope(cfg *model.Config, b *Behaviour, who string) {
	r := b.Rope
	c.check(SourceBehaviour, "rope_table")
	call := fmt.Sprintf("generate_rope_lut(config=LlamaConfig(), seq_len=%d)", r.SeqLen)
	switch {
	case !r.Defined:
		c.fail("rope_table", nil, nil, "%s defines no generate_rope_lut(config, seq_len, dtype), which the later phases import for the RoPE table", who)
		return
	case r.Raised != "":
		c.fail("rope_table", nil, nil, "%s of %s raised %s", call, who, r.Raised)
		return
	case r.Type != "ndarray":
		c.fail("rope_table", nil, r.Type, "%s returned a %s, expected a NumPy array (%d, %d)", call, r.Type, r.SeqLen, r.HeadDim)
		return
	}
	want := []int64{int64(r.SeqLen), int64(r.HeadDim)}
	mod, ok := b.Array("rope.module")
	if !slices.Equal(r.Shape, want) || !ok {
		c.fail("rope_table", want, r.Shape, "%s returned shape %v dtype %s, expected (%d, %d): [cos_0..cos_%d, sin_0..sin_%d] per position",
			call, r.Shape, r.DType, r.SeqLen, r.HeadDim, r.HeadDim/2-1, r.HeadDim/2-1)
		return
	}
	ref, ok := b.Array("rope.transformers")
	if !ok || len(ref.Data) != len(mod.Data) {
		c.fail("rope_table", nil, nil, "the worker sent no transformers table of %d values to compare %s with", len(mod.Data), call)
		return
	}
	d := diffTables(mod.Data, ref.Data)
	n := len(mod.Data)
	if d.first < 0 {
		if d.differing == 0 {
			c.judged(ropeFields, false, "%s equals transformers' rotary embedding in bf16 at every element (%d positions × %d)", call, r.SeqLen, r.HeadDim)
		} else {
			c.judged(ropeFields, true, "%s: %d of %d elements differ from transformers' rotary embedding by one bf16 step (max %.3g; e.g. float64 instead of float32 angles), none by more",
				call, d.differing, n, d.maxErr)
		}
		return
	}
	pos, col := d.first/r.HeadDim, d.first%r.HeadDim
	half := r.HeadDim / 2
	which := fmt.Sprintf("cos_%d", col)
	if col >= half {
		which = fmt.Sprintf("sin_%d", col-half)
	}
	msg := fmt.Sprintf("%s differs from transformers' rotary embedding for config.json by up to %.4g (%.1f bf16 steps) at %d of %d elements; first beyond one step at position %d (%s)",
		call, d.maxErr, d.maxErr/ropeStep, d.differing, n, pos, which)
	if cfg.RopeScaling == nil {
		c.fail("rope_table", nil, nil, "%s; config.json gives plain RoPE with rope_theta %g", msg, cfg.RopeBase)
		return
	}
	scaling := describeScaling(cfg.RopeScaling)
	if plain, ok := b.Array("rope.transformers_unscaled"); ok && len(plain.Data) == n && diffTables(mod.Data, plain.Data).first < 0 {
		c.fail("rope_scaling", scaling, "ignored", "%s: the table ignores config.json's rope scaling (%s) — it equals plain RoPE with rope_theta %g within one bf16 step",
			msg, scaling, cfg.RopeBase)
		return
	}
	c.fail("rope_table", scaling, nil, "%s; config.json's rope scaling is %s, and the table is not plain RoPE either", msg, scaling)
}

// describeScaling names a rope scaling with every parameter that shapes it.
func describeScaling(s *model.RopeScaling) string {
	out := fmt.Sprintf("%s, factor %g", s.RopeType, s.Factor)
	if s.RopeType == "llama3" {
		out += fmt.Sprintf(", low_freq_factor %g, high_freq_factor %g, original_max_position_embeddings %d",
			s.LowFreqFactor, s.HighFreqFactor, s.OriginalMaxPositionEmbeddings)
	}
	return out
}

func (c *Consistency) norms(cfg *model.Config, b *Behaviour) {
	helpers := "the helpers module"
	if b.HelpersModule != nil {
		helpers = *b.HelpersModule
	}
	if !b.HelpersFound {
		c.check(SourceBehaviour, "rms_norm")
		c.fail("rms_norm_eps", cfg.RMSNormEps, nil, "there is no %s next to the weights module: production imports rms_norm from it", helpers)
		return
	}
	if b.HelpersRaised != "" {
		c.check(SourceBehaviour, "rms_norm")
		c.fail("rms_norm_eps", cfg.RMSNormEps, nil, "importing %s raised %s", helpers, b.HelpersRaised)
		return
	}
	for _, n := range b.Norms {
		c.check(SourceBehaviour, n.Helper)
		if !n.Defined {
			c.fail("rms_norm_eps", cfg.RMSNormEps, nil, "%s defines no %s(x, weight, eps), which production imports for the final norm", helpers, n.Helper)
			continue
		}
		if n.Raised != "" {
			c.fail("rms_norm_eps", cfg.RMSNormEps, nil, "%s.%s on the probe raised %s", helpers, n.Helper, n.Raised)
			continue
		}
		c.norm(cfg, b, n, helpers)
	}
}

// norm compares one helper with transformers' RMSNorm on the probe: row 0
// has mean square eps in every group (so another eps shows), row 1 is N(0, 1).
func (c *Consistency) norm(cfg *model.Config, b *Behaviour, n wire.NormFacts, helpers string) {
	p := "norm." + n.Helper + "."
	x, okX := b.Array(p + "x")
	w, okW := b.Array(p + "weight")
	ref, okR := b.Array(p + "transformers")
	got, okG := b.Array(p + "module")
	width := n.Width * n.Groups
	call := fmt.Sprintf("%s.%s (its default eps)", helpers, n.Helper)
	if n.EpsArgument != nil {
		call = fmt.Sprintf("%s.%s (no default eps; called with eps=%g)", helpers, n.Helper, *n.EpsArgument)
	}
	if n.Width <= 0 || n.Groups <= 0 || !okX || !okW || !okR || !okG || len(x.Data) != 2*width || len(w.Data) != n.Width || len(ref.Data) != 2*width {
		c.fail("rms_norm_eps", cfg.RMSNormEps, nil, "the worker sent an incomplete probe for %s", n.Helper)
		return
	}
	if len(got.Data) != len(ref.Data) {
		c.fail("rms_norm_eps", cfg.RMSNormEps, nil, "%s returned shape %v on a (2, %d) probe, expected (2, %d)", call, got.Shape, width, width)
		return
	}
	rel := func(row int) float64 {
		var diff, scale float64
		for i := row * width; i < (row+1)*width; i++ {
			e := math.Abs(float64(got.Data[i]) - float64(ref.Data[i]))
			if math.IsNaN(e) {
				return math.Inf(1)
			}
			diff, scale = max(diff, e), max(scale, math.Abs(float64(ref.Data[i])))
		}
		if scale == 0 {
			return diff
		}
		return diff / scale
	}
	small, plain := rel(0), rel(1)
	implied := impliedEps(x.Data[:width], w.Data, got.Data[:width], n.Width)
	behaves := fmt.Sprintf("it behaves as eps ≈ %.3g", implied)
	if math.IsNaN(implied) {
		behaves = "no eps explains its output"
	}
	switch {
	case plain > normTolerance:
		c.fail("rms_norm_eps", cfg.RMSNormEps, nil, "%s differs from transformers' RMSNorm by %.3g (relative) on a plain N(0, 1) input: it is not an RMSNorm of x by weight",
			call, plain)
	case small > normTolerance:
		c.fail("rms_norm_eps", cfg.RMSNormEps, implied, "%s differs from transformers' RMSNorm with config.json's rms_norm_eps %g by %.3g (relative) on a probe whose mean square is that eps: %s",
			call, cfg.RMSNormEps, small, behaves)
	default:
		c.judged([]string{"rms_norm_eps"}, false, "%s matches transformers' RMSNorm with rms_norm_eps %g on a probe where eps matters (max relative error %.2g; %s)", call, cfg.RMSNormEps, max(small, plain), behaves)
	}
}

// impliedEps solves y = x·w / sqrt(ms + eps) for eps, per group of width
// values, and returns the mean over groups (NaN when y is zero or not finite).
func impliedEps(x, w, y []float32, width int) float64 {
	var sum float64
	groups := len(x) / width
	for g := range groups {
		var xw2, y2, ms float64
		for i := g * width; i < (g+1)*width; i++ {
			v := float64(x[i]) * float64(w[i-g*width])
			xw2 += v * v
			y2 += float64(y[i]) * float64(y[i])
			ms += float64(x[i]) * float64(x[i])
		}
		if y2 == 0 || math.IsNaN(y2) || math.IsInf(y2, 0) {
			return math.NaN()
		}
		sum += xw2/y2 - ms/float64(width)
	}
	return sum / float64(groups)
}

// Tie judges the tie by the loader's arrays: a tied config's lm_head must
// hold embed_table's values; an untied config's must not quietly be them
// (unless the checkpoint's own lm_head.weight is a byte-identical copy).
// t is nil when the loader returned no arrays, which gate 1 reports.
func (c *Consistency) Tie(cfg *model.Config, t *wire.TieFacts, inv *safetensors.Inventory, fsys fs.FS) {
	if t == nil {
		return
	}
	c.check(SourceBehaviour, "lm_head_tie")
	tied := cfg.TieWordEmbeddings
	same := t.SameObject || t.Differing != nil && *t.Differing == 0
	switch {
	case tied && t.Differing == nil && !t.SameObject:
		c.fail("tie_word_embeddings", true, false, "config.json ties lm_head to the embeddings but the loader's lm_head has another shape than its embed_table")
	case tied && !same:
		c.fail("tie_word_embeddings", true, false, "config.json ties lm_head to the embeddings but the loader's lm_head differs from its embed_table at %d of %d elements", *t.Differing, t.Elements)
	case tied:
		c.judged(tieField, false, "config.json ties the embeddings and the loader's lm_head %s", sameText(t))
	case same && checkpointHeadIsEmbedding(inv, fsys):
		c.judged(tieField, true, "config.json does not tie the embeddings and the loader's lm_head %s, as the checkpoint's lm_head.weight is a byte-identical copy of them", sameText(t))
	case same:
		c.fail("tie_word_embeddings", false, true, "config.json does not tie the embeddings but the loader's lm_head %s, while the checkpoint's lm_head.weight is absent or differs: the logits would come from the wrong matrix", sameText(t))
	default:
		c.judged(tieField, false, "config.json does not tie the embeddings and the loader's lm_head is its own matrix (differs from embed_table at %d of %d elements)", *t.Differing, t.Elements)
	}
}

func sameText(t *wire.TieFacts) string {
	if t.SameObject {
		return "is embed_table (the same array)"
	}
	return "equals embed_table at every element"
}

func checkpointHeadIsEmbedding(inv *safetensors.Inventory, fsys fs.FS) bool {
	if inv == nil {
		return false
	}
	head, okH := inv.Tensor("lm_head.weight")
	emb, okE := inv.Tensor("model.embed_tokens.weight")
	if !okH || !okE || fsys == nil {
		return false
	}
	same, err := safetensors.SameBytes(fsys, emb, head)
	return err == nil && same
}
