package quant

import (
	"fmt"
	"math"
	"slices"

	"phase0/read/model"
	"phase0/read/tensornames"
	"phase0/wire"
)

// Gemma 3's bundles store their kept tensors under conventions
// (tensornames.FamilyAdditions): every RMSNorm weight (four per layer, the
// QK-norms, the final norm) as 1 + w, since Gemma's norm computes
// x · (1 + w) and the kernel computes x · w; the embedding multiplied by
// √hidden. The worker brings the reference to the convention before the
// bitwise comparison (within one bf16 step: the rounding of 1 + w or
// w · √hidden done another way) and, when it is off, compares the tensor
// with each mistaken way of storing it: the closest names the cause.

// convention is what a convention means and the mistakes it invites, by
// the worker's confusion names.
type convention struct {
	stored   string
	mistakes map[string]string
}

var conventions = map[tensornames.Convention]convention{
	tensornames.OnePlus: {
		stored: "1 + w (Gemma's x · (1 + w) folded for a kernel computing x · w)",
		mistakes: map[string]string{
			"stored_as_w":    "the norm stored as w — Gemma's +1 not folded in",
			"one_plus_twice": "the norm stored as 1 + w twice — the +1 folded again over weights that had it",
		},
	},
	tensornames.EmbedScale: {
		stored: "w · √hidden (Gemma's embedding scale folded in)",
		mistakes: map[string]string{
			"unscaled":     "the embedding stored unscaled — √hidden not applied",
			"scaled_twice": "the embedding multiplied by √hidden twice",
		},
	},
}

// conventionExplains is how close (relative L2) a mistaken storing must be
// to name it: a few bf16 steps.
const conventionExplains = 0.02

// conventionFailure is why a kept tensor stored under a convention failed,
// with the mistake the numbers point at.
func conventionFailure(t wire.QuantTensor) string {
	c, ok := conventions[tensornames.Convention(t.Convention)]
	if !ok {
		return fmt.Sprintf("stored under convention %q, which phase0 does not know", t.Convention)
	}
	msg := fmt.Sprintf("stored as %s, yet %d of %d elements are more than one bf16 step from the reference brought to it", c.stored, *t.Differing, product(t.ReferenceShape))
	if t.Stats != nil {
		m := Of(*t.Stats)
		msg += fmt.Sprintf(" (max |diff| %.4g, relative L2 %.4f)", m.MaxAbsDiff, m.RelL2)
	}
	best, bestRel := "", math.Inf(1)
	names := make([]string, 0, len(t.Confusions))
	for name := range t.Confusions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, known := c.mistakes[name]; !known {
			continue
		}
		if rel := Of(t.Confusions[name]).RelL2; rel < bestRel {
			best, bestRel = name, rel
		}
	}
	if best != "" && bestRel <= conventionExplains {
		msg += fmt.Sprintf("; likely cause: %s (relative L2 %.2g against that)", c.mistakes[best], bestRel)
	}
	return msg
}

// Gemma 3's module constants beyond the shared ones, against text_config.
func init() {
	familyConstants["gemma3"] = map[string]familyConstant{
		"EMBED_SCALE":               {"sqrt(hidden_size)", func(_ *model.Config, d *model.Deployed) float64 { return d.EmbedScale }},
		"ROPE_LOCAL_THETA":          {"rope_local_base_freq", func(_ *model.Config, d *model.Deployed) float64 { return d.LocalRopeBase }},
		"ROPE_GLOBAL_THETA":         {"rope_theta", func(c *model.Config, _ *model.Deployed) float64 { return c.RopeBase }},
		"ROPE_GLOBAL_LINEAR_FACTOR": {"rope_scaling.factor", func(c *model.Config, _ *model.Deployed) float64 { return linearFactor(c) }},
		"SLIDING_WINDOW":            {"sliding_window", func(_ *model.Config, d *model.Deployed) float64 { return float64(d.SlidingWindow) }},
		"SLIDING_PATTERN":           {"sliding_window_pattern", func(_ *model.Config, d *model.Deployed) float64 { return float64(d.SlidingPattern) }},
		"ATTN_SCALE":                {"1/sqrt(query_pre_attn_scalar)", func(_ *model.Config, d *model.Deployed) float64 { return 1 / math.Sqrt(d.QueryPreAttnScalar) }},
	}
}

// linearFactor is the global layers' linear RoPE factor (1 without scaling).
func linearFactor(c *model.Config) float64 {
	if c.RopeScaling != nil && c.RopeScaling.RopeType == "linear" {
		return c.RopeScaling.Factor
	}
	return 1
}
