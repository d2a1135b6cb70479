package quant

import (
	"fmt"
	"math"
	"slices"

	"phase0/gate/verdict"
	"phase0/read/model"
	"phase0/wire"
)

// A deployed family's module (Gemma 3, Phi-3) hard-codes constants beyond
// the shared ones (the sliding pattern, both RoPE bases, the rotated
// dims …), decides which layers are global, and builds its own RoPE
// table. The worker evaluates the module (op quant_family_facts); each
// family says what its constants stand for (gemma3.go, phi3.go), and its
// tables are judged by behaviour against transformers'.

// familyConstant is what one of a family's constant names stands for.
type familyConstant struct {
	field string
	of    func(*model.Config, *model.Deployed) float64
}

// familyConstants are each deployed family's constant names (gemma3.go, phi3.go).
var familyConstants = map[string]map[string]familyConstant{}

// RopeTolerance is the largest difference a RoPE table may have from
// transformers': the bf16 rounding of cos and sin (≤ 1.19 with LongRoPE's
// scaling: half a step is 0.0039) and of the angle's inputs.
const RopeTolerance = 0.01

// JudgeFamily adds a deployed family's part of quantized gate 3 to c: its
// module's family constants against config.json, which layers it makes
// global, and its RoPE tables by behaviour.
func (c *Constants) JudgeFamily(family string, f *wire.QuantFamilyFacts, cfg *model.Config, d *model.Deployed) {
	names := make([]string, 0, len(familyConstants[family]))
	for n := range familyConstants[family] {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		v, ok := f.Constants[n]
		if !ok {
			continue
		}
		fc := familyConstants[family][n]
		want := fc.of(cfg, d)
		eq := closeEnough(v, want) || (n == "EMBED_SCALE" && math.Abs(v-want) <= 1e-6*want)
		c.Checked = append(c.Checked, Constant{Name: n, Field: fc.field, Value: v, Expected: want, Against: "reference", Equal: eq})
		if !eq {
			c.FailWith("%s: %s = %g, but the reference's config.json gives %s = %g", c.Module, n, v, fc.field, want)
		}
	}
	if f.GlobalLayers != nil && d.SlidingPattern > 0 {
		var want []int
		for k := range cfg.NLayers {
			if d.GlobalLayer(k) {
				want = append(want, k)
			}
		}
		if !slices.Equal(f.GlobalLayers, want) {
			c.FailWith("%s: is_global_layer makes layers %v global, but config.json's sliding pattern (%d) makes %v", c.Module, f.GlobalLayers, d.SlidingPattern, want)
		}
	}
	if f.RopeError != "" {
		c.FailWith("%s: its RoPE table could not be built: %s", c.Module, f.RopeError)
	}
	for _, t := range f.Rope {
		if t.MaxDiff <= RopeTolerance {
			continue
		}
		switch {
		case t.OtherDiff >= 0 && t.OtherDiff <= RopeTolerance:
			c.FailWith("%s: RoPE %s differs from transformers' by %.4g (tolerance %g) but matches the other layer kind's table (%.4g): the module gives this layer the wrong kind", c.Module, t.Label, t.MaxDiff, RopeTolerance, t.OtherDiff)
		case f.FactorRel > 0 && f.FactorRelBF >= 0 && f.FactorRelBF < 1e-9:
			c.Status = verdict.Worst(c.Status, verdict.Warn)
			c.Find("%s: RoPE %s differs from transformers' by %.4g (tolerance %g): the LongRoPE factors it reads are config.json's rounded to bf16 (relative %.2g), which moves large angles; faithful to the bundle, not to transformers", c.Module, t.Label, t.MaxDiff, RopeTolerance, f.FactorRel)
		default:
			c.FailWith("%s: RoPE %s differs from transformers' by %.4g over positions %v (tolerance %g)", c.Module, t.Label, t.MaxDiff, t.Positions, RopeTolerance)
		}
	}
	c.Summary = fmt.Sprintf("%d hard-coded constants of %s checked against config.json; %d RoPE tables judged by behaviour", len(c.Checked), c.Module, len(f.Rope))
	if len(c.Findings) > 0 && c.Status != verdict.Pass {
		c.Summary = fmt.Sprintf("%d finding(s) on %s's constants and RoPE", len(c.Findings), c.Module)
	}
}
