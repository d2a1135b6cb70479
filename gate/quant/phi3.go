package quant

import (
	"fmt"
	"strings"

	"phase0/read/model"
	"phase0/read/tensornames"
)

// Phi-3's reference fuses q, k, v into one qkv_proj (rows [q; k; v]) and
// gate, up into gate_up_proj (rows [gate; up]); its bundles hold them
// split. The worker reads the reference's parts as the split projections
// (tensornames.FamilyAdditions' Fused), so a bundle split in another order is a
// projection close to another part's rows: the partner confusion, which
// here names the order the bundle used.

// fusedOrder is the cause a partner match means for a field of a fused
// reference tensor: the rows split in another order. "" when field is not
// part of one in family.
func fusedOrder(family, field string) string {
	fam, ok := tensornames.AdditionsOf(family)
	if !ok {
		return ""
	}
	fu, _, ok := fam.FusedOf(field)
	partner := tensornames.Partners[field]
	if !ok || !strings.Contains(strings.Join(fu.Parts, " "), partner) {
		return ""
	}
	order := make([]string, len(fu.Parts))
	for i, p := range fu.Parts {
		switch p {
		case field:
			order[i] = partner
		case partner:
			order[i] = field
		default:
			order[i] = p
		}
	}
	return fmt.Sprintf("rows of the fused %s split in %s order where the reference's is %s — %s holds %s's rows",
		strings.TrimSuffix(fu.HF, ".weight"), fieldOrder(order), fieldOrder(fu.Parts), field, partner)
}

func fieldOrder(fields []string) string {
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = f
		for _, t := range tensornames.Projections() {
			if t.Field == f {
				keys[i] = t.Key
			}
		}
	}
	return "[" + strings.Join(keys, ", ") + "]"
}

// Phi-3's module constants, against config.json (phi4_mini_config() is
// judged as every module's *_config()).
func init() {
	familyConstants["phi3"] = map[string]familyConstant{
		"ROPE_DIM":          {"head_dim*partial_rotary_factor", func(_ *model.Config, d *model.Deployed) float64 { return float64(d.RopeDim) }},
		"ROPE_BASE":         {"rope_theta", func(c *model.Config, _ *model.Deployed) float64 { return c.RopeBase }},
		"ROPE_ORIG_MAX_POS": {"original_max_position_embeddings", func(_ *model.Config, d *model.Deployed) float64 { return float64(d.OriginalMaxPos) }},
	}
}
