package weights

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"slices"

	"phase0/gate/verdict"
	"phase0/internal/stformat"
	"phase0/read/model"
	"phase0/read/safetensors"
	"phase0/read/tensornames"
	"phase0/wire"
)

// Loader is gates.python_weights: the generated (or existing) weights module
// loading the checkpoint, judged here from the facts Python reported.
type Loader struct {
	verdict.Section
	Layers   int      `json:"layers"`
	Tensors  int      `json:"tensors"`
	Sampled  int      `json:"sampled"` // values compared with the checkpoint
	Problems []string `json:"problems"`
}

// NewLoader returns an empty section.
func NewLoader() *Loader {
	return &Loader{Section: verdict.NewSection(), Problems: []string{}}
}

// Raised records that importing or running the loader raised.
func (l *Loader) Raised(reasons []string) {
	for _, r := range reasons {
		l.problem("%s", r)
	}
	l.Summary = "load_weights failed: " + reasons[0]
}

func (l *Loader) problem(format string, args ...any) {
	l.FailWith(format, args...)
	if len(l.Problems) < verdict.MaxFindings {
		l.Problems = append(l.Problems, fmt.Sprintf(format, args...))
	}
}

// loaderField is one LlamaWeights field and the HF tensor it comes from.
type loaderField struct {
	field      string
	hf         string // "%d" is the layer index
	transposed bool   // projections are stored (in, out) for y = x @ W
}

// globalFields are the loader's whole-model tensors.
func globalFields() []loaderField {
	var out []loaderField
	for _, g := range tensornames.Globals {
		out = append(out, loaderField{g.Field, g.HF, false})
	}
	return out
}

// layerFields are the tensors every layer of this config has, in
// LlamaWeights' order.
func layerFields(cfg *model.Config) []loaderField {
	var out []loaderField
	for _, t := range tensornames.Layer {
		if (t.Option == "qkv_bias" && !cfg.QKVBias) || (t.Option == "qk_norm" && !cfg.QKNorm) {
			continue
		}
		out = append(out, loaderField{t.Field, "model.layers.%d." + t.HF, t.Projection})
	}
	return out
}

// optionalField is the config feature a layer tensor needs, if any.
func optionalField(field string) (string, bool) {
	for _, t := range tensornames.Layer {
		if t.Field == field && t.Option != "" {
			return t.Option, true
		}
	}
	return "", false
}

// CheckLoader judges what the loader returned: every field present with the
// (in, out) layout's shape and dtype bfloat16, no field the config does not
// ask for, and every sampled value equal to the checkpoint tensor it should
// come from (transpose-aware), so a loader that reads w_gate from up_proj,
// swaps q and k or forgets a transpose fails naming the field.
func CheckLoader(cfg *model.Config, facts *wire.LoaderFacts, inv *safetensors.Inventory, fsys fs.FS) *Loader {
	l := NewLoader()
	shapes := map[string][]int64{}
	for _, spec := range model.ExpectedTensors(cfg) {
		shapes[spec.Name] = spec.Shape
	}
	if cfg.TieWordEmbeddings {
		shapes["lm_head.weight"] = shapes["model.embed_tokens.weight"]
	}
	check := func(where string, f loaderField, hf string, a wire.ArrayFacts, ok bool) {
		want := shapes[hf]
		if f.transposed {
			want = []int64{want[1], want[0]}
		}
		switch {
		case !ok:
			l.problem("%s: missing (expected %v bfloat16 from %s)", where, want, hf)
			return
		case a.Type != "ndarray":
			l.problem("%s: is %s, expected a NumPy array %v bfloat16", where, a.Type, want)
			return
		}
		l.Tensors++
		if !slices.Equal(a.Shape, want) {
			l.problem("%s: shape %v, expected %v", where, a.Shape, want)
			return
		}
		if a.DType != "bfloat16" {
			l.problem("%s: dtype %s, expected bfloat16", where, a.DType)
			return
		}
		name := hf
		if f.field == "lm_head" && cfg.TieWordEmbeddings {
			name = "model.embed_tokens.weight"
		}
		if t, ok := inv.Tensor(name); ok {
			l.compare(where, f, t, a, fsys)
		}
	}
	for _, f := range globalFields() {
		a, ok := facts.Globals[f.field]
		check(f.field, f, f.hf, a, ok)
	}
	l.Layers = len(facts.Layers)
	if facts.Layers == nil {
		l.problem("layers: the loaded weights have no layers list")
	} else if len(facts.Layers) != cfg.NLayers {
		l.problem("layers: %d loaded, expected n_layers=%d", len(facts.Layers), cfg.NLayers)
	}
	fields := layerFields(cfg)
	for i, layer := range facts.Layers {
		for _, f := range fields {
			a, ok := layer[f.field]
			check(fmt.Sprintf("layer %d %s", i, f.field), f, fmt.Sprintf(f.hf, i), a, ok)
		}
		for _, name := range slices.Sorted(maps.Keys(layer)) {
			if flag, opt := optionalField(name); opt && !slices.ContainsFunc(fields, func(f loaderField) bool { return f.field == name }) {
				l.problem("layer %d %s: loaded, but config.%s is false", i, name, flag)
			}
		}
	}
	if l.Status == verdict.Pass {
		l.Summary = fmt.Sprintf("%d layers, %d arrays loaded, %d sampled values equal the checkpoint", l.Layers, l.Tensors, l.Sampled)
	} else if l.Summary == "" {
		l.Summary = l.Problems[0]
	}
	return l
}

// compare reads the checkpoint elements at the sampled positions and checks
// the loaded bf16 bits against them (the checkpoint value rounded to bf16 as
// ml_dtypes rounds, nearest-even).
func (l *Loader) compare(where string, f loaderField, t safetensors.Tensor, a wire.ArrayFacts, fsys fs.FS) {
	if len(t.Shape) != len(a.Shape) || len(a.Samples) == 0 {
		return
	}
	flat := make([]int64, 0, len(a.Samples))
	for _, s := range a.Samples {
		if len(s.Index) != len(t.Shape) || s.Bits == nil {
			return
		}
		var idx int64
		switch len(t.Shape) {
		case 1:
			idx = s.Index[0]
		case 2:
			r, c := s.Index[0], s.Index[1]
			if f.transposed {
				r, c = c, r
			}
			idx = r*t.Shape[1] + c
		default:
			return
		}
		flat = append(flat, idx)
	}
	raw, err := safetensors.ReadElements(fsys, t, flat)
	if err != nil {
		l.problem("%s: reading %s to compare values: %v", where, t.Name, err)
		return
	}
	for k, s := range a.Samples {
		want, ok := toBF16(t.DType, raw[k])
		if !ok {
			return
		}
		l.Sampled++
		got := *s.Bits
		if got != want && !(isNaN16(got) && isNaN16(want)) {
			how := ""
			if f.transposed {
				how = " transposed"
			}
			l.problem("%s: value at %v is bf16 %#04x but %s%s holds %#04x there (a swapped tensor or a missing transpose?)", where, s.Index, got, t.Name, how, want)
			return
		}
	}
}

// toBF16 converts one checkpoint element to bf16 bits, rounding to nearest even.
func toBF16(dtype string, b []byte) (uint16, bool) {
	switch dtype {
	case "BF16":
		return binary.LittleEndian.Uint16(b), true
	case "F32":
		return stformat.RoundBF16(math.Float32frombits(binary.LittleEndian.Uint32(b))), true
	case "F16":
		return stformat.RoundBF16(f16ToF32(binary.LittleEndian.Uint16(b))), true
	}
	return 0, false
}

func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		for mant&0x400 == 0 {
			mant <<= 1
			exp--
		}
		exp++
		mant &= 0x3ff
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

func isNaN16(b uint16) bool { return b&0x7f80 == 0x7f80 && b&0x7f != 0 }
