package quant

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"phase0/gate/config"
	"phase0/gate/verdict"
	"phase0/read/model"
)

// Constants is quantized gate 3: the dimensions and constants a quantized
// module hard-codes (D = 2048, INTER = 8192 …), each against the
// reference's config.json and, where the bundle ships one, its own.
type Constants struct {
	verdict.Section
	Module  string     `json:"module"`
	Checked []Constant `json:"checked"`
	// Behaviour is the module's RoPE table judged by behaviour against
	// transformers (gate/config), when the module defines generate_rope_lut
	// or takes its config class from a module that does (RopeFrom).
	Behaviour *config.Consistency `json:"behaviour,omitempty"`
	// RopeFrom is the module whose RoPE table was judged when it is not
	// Module itself.
	RopeFrom string `json:"rope_from,omitempty"`
	// Divisions are the folder's divisions of a dimension by a tile or
	// slice constant, each judged for a remainder (divisibility.go).
	Divisions []DivisionCheck `json:"divisions,omitempty"`
}

// Constant is one hard-coded value and what it was compared with.
type Constant struct {
	Name     string  `json:"name"`
	Field    string  `json:"field"` // the config.json meaning, in phase0's Config names
	Value    float64 `json:"value"`
	Expected float64 `json:"expected"`
	Against  string  `json:"against"` // "reference" or "bundle"
	// File is the file that hard-codes it, when not Module (the folder's
	// verify_adapter.py).
	File  string `json:"file,omitempty"`
	Equal bool   `json:"equal"`
}

// constantFields says which config value each of upstream's constant names
// stands for. Names are the ones the tree's quantized modules use.
var constantFields = map[string]struct {
	field string
	of    func(*model.Config) float64
}{
	"D":          {"emb_dim", func(c *model.Config) float64 { return float64(c.EmbDim) }},
	"DQ":         {"n_heads*head_dim", func(c *model.Config) float64 { return float64(c.NHeads * c.HeadDim) }},
	"DK":         {"n_kv_heads*head_dim", func(c *model.Config) float64 { return float64(c.NKVHeads * c.HeadDim) }},
	"DV":         {"n_kv_heads*head_dim", func(c *model.Config) float64 { return float64(c.NKVHeads * c.HeadDim) }},
	"DH":         {"head_dim", func(c *model.Config) float64 { return float64(c.HeadDim) }},
	"N_Q_HEADS":  {"n_heads", func(c *model.Config) float64 { return float64(c.NHeads) }},
	"N_KV_HEADS": {"n_kv_heads", func(c *model.Config) float64 { return float64(c.NKVHeads) }},
	"Q_PER_KV":   {"n_heads/n_kv_heads", func(c *model.Config) float64 { return float64(c.NHeads / max(c.NKVHeads, 1)) }},
	"INTER":      {"hidden_dim", func(c *model.Config) float64 { return float64(c.HiddenDim) }},
	"VOCAB":      {"vocab_size", func(c *model.Config) float64 { return float64(c.VocabSize) }},
	"NUM_LAYERS": {"n_layers", func(c *model.Config) float64 { return float64(c.NLayers) }},
	"N_LAYERS":   {"n_layers", func(c *model.Config) float64 { return float64(c.NLayers) }},
	"_N_LAYERS":  {"n_layers", func(c *model.Config) float64 { return float64(c.NLayers) }},
	"ROPE_THETA": {"rope_base", func(c *model.Config) float64 { return c.RopeBase }},
	"RMS_EPS":    {"rms_norm_eps", func(c *model.Config) float64 { return c.RMSNormEps }},
	"ATTN_SCALE": {"1/sqrt(head_dim)", func(c *model.Config) float64 { return 1 / math.Sqrt(float64(c.HeadDim)) }},
}

// A top-level NAME = <number> assignment, with an optional comment; an
// expression (NUM_LAYERS = _w.NUM_LAYERS) is not a hard-coded constant.
var constantLine = regexp.MustCompile(`(?m)^([A-Z_][A-Z0-9_]*)\s*=\s*([0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?)\s*(?:#[^\n]*)?$`)

// ModuleConstants reads the numeric constants of a module's source that
// stand for a config value.
func ModuleConstants(src []byte) map[string]float64 {
	out := map[string]float64{}
	for _, m := range constantLine.FindAllSubmatch(src, -1) {
		name := string(m[1])
		if _, ok := constantFields[name]; !ok {
			continue
		}
		if v, err := strconv.ParseFloat(string(m[2]), 64); err == nil {
			if _, seen := out[name]; !seen {
				out[name] = v
			}
		}
	}
	return out
}

// checkConstants judges a module's constants against the reference's
// config and, when bundle is non-nil, the bundle's config.json.
func checkConstants(module string, consts map[string]float64, ref, bundle *model.Config) *Constants {
	return CheckConstantsFrom(module, consts, nil, ref, bundle)
}

// CheckConstantsFrom is checkConstants for constants some of which another
// file of the folder hard-codes: files[name] names it, and a finding names
// that file, not the module.
func CheckConstantsFrom(module string, consts map[string]float64, files map[string]string, ref, bundle *model.Config) *Constants {
	c := &Constants{Section: verdict.NewSection(), Module: module, Checked: []Constant{}}
	names := make([]string, 0, len(consts))
	for n := range consts {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, against := range []struct {
		name string
		cfg  *model.Config
	}{{"reference", ref}, {"bundle", bundle}} {
		if against.cfg == nil {
			continue
		}
		for _, n := range names {
			f, ok := fieldOf(n)
			if !ok {
				continue
			}
			want := f.of(against.cfg)
			eq := closeEnough(consts[n], want)
			file := module
			if files[n] != "" {
				file = files[n]
			}
			c.Checked = append(c.Checked, Constant{Name: n, Field: f.field, Value: consts[n], Expected: want, Against: against.name, Equal: eq, File: files[n]})
			if !eq {
				c.FailWith("%s: %s = %g, but the %s's config.json gives %s = %g", file, n, consts[n], against.name, f.field, want)
			}
		}
	}
	c.Summary = fmt.Sprintf("%d hard-coded constants of %s checked against config.json", len(c.Checked), module)
	if c.Status != verdict.Pass {
		c.Summary = fmt.Sprintf("%d of %d hard-coded constants of %s disagree with config.json", len(c.Findings), len(c.Checked), module)
	}
	return c
}

// closeEnough compares a constant written in decimal with a config value
// (1e-6 vs 1e-06; 0.08838834764831843 vs 1/sqrt(128)).
func closeEnough(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// configFunctionFields are the Config fields a module's *_config()
// function returns (the bf16 loaders' LlamaConfig), by name.
var configFunctionFields = map[string]func(*model.Config) float64{
	"n_layers":     func(c *model.Config) float64 { return float64(c.NLayers) },
	"emb_dim":      func(c *model.Config) float64 { return float64(c.EmbDim) },
	"n_heads":      func(c *model.Config) float64 { return float64(c.NHeads) },
	"head_dim":     func(c *model.Config) float64 { return float64(c.HeadDim) },
	"n_kv_heads":   func(c *model.Config) float64 { return float64(c.NKVHeads) },
	"hidden_dim":   func(c *model.Config) float64 { return float64(c.HiddenDim) },
	"vocab_size":   func(c *model.Config) float64 { return float64(c.VocabSize) },
	"rope_base":    func(c *model.Config) float64 { return c.RopeBase },
	"rms_norm_eps": func(c *model.Config) float64 { return c.RMSNormEps },
}

// fieldOf is what a constant's name stands for: one of upstream's
// constant names, or "fn().field" for a value a *_config() function returned.
func fieldOf(name string) (struct {
	field string
	of    func(*model.Config) float64
}, bool) {
	if f, ok := constantFields[name]; ok {
		return f, true
	}
	if strings.HasSuffix(name, "(theta)") { // a RoPE function's θ default
		return struct {
			field string
			of    func(*model.Config) float64
		}{"rope_base", func(c *model.Config) float64 { return c.RopeBase }}, true
	}
	_, field, ok := strings.Cut(name, "().")
	of, known := configFunctionFields[field]
	return struct {
		field string
		of    func(*model.Config) float64
	}{field, of}, ok && known
}

// ConfigFunctionConstants are the numeric values a module's config
// function fn returned (the worker called it), keyed "fn().field", for
// checkConstants. Fields that are not numbers (dtype) are left out.
func ConfigFunctionConstants(fn string, fields map[string]json.RawMessage) map[string]float64 {
	out := map[string]float64{}
	for field, raw := range fields {
		if _, ok := configFunctionFields[field]; !ok {
			continue
		}
		var v float64
		if json.Unmarshal(raw, &v) == nil {
			out[fn+"()."+field] = v
		}
	}
	return out
}

// JudgeBehaviour judges the module's RoPE table by behaviour against
// transformers (gate/config), and its norms too when the module defines
// rms_norm (norms); a finding there is one of this section's.
func (c *Constants) JudgeBehaviour(cfg *model.Config, b *config.Behaviour, norms bool) {
	cc := config.New()
	module := c.Module
	if c.RopeFrom != "" {
		module = filepath.Base(c.RopeFrom) + " (whose RoPE table and config " + c.Module + " uses)"
	}
	if norms {
		cc.Behaviour(cfg, b, module)
	} else {
		cc.RopeBehaviour(cfg, b, module)
	}
	c.Behaviour = cc
	if cc.Status != verdict.Pass {
		for _, f := range cc.AllFindings() {
			c.FailWith("%s", f)
		}
	}
}

// CheckBundleConfig judges the bundle's own config.json against the
// reference's on every value a module's constants, config function or RoPE
// table stand for: gate 3 holds the module to the reference's, so a bundle
// that says otherwise (rope_theta 10000 where the module and the reference
// say 500000) is one the module cannot match, whatever the module
// hard-codes. Nil bundle (none shipped): nothing to check.
func (c *Constants) CheckBundleConfig(ref, bundle *model.Config) {
	if ref == nil || bundle == nil {
		return
	}
	fields := make([]string, 0, len(configFunctionFields))
	for f := range configFunctionFields {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	for _, f := range fields {
		of := configFunctionFields[f]
		if b, r := of(bundle), of(ref); !closeEnough(b, r) {
			c.FailWith("the bundle's config.json gives %s = %g, the reference's %g: %s is held to the reference's, so it cannot match the bundle's", f, b, r, c.Module)
		}
	}
	if !reflect.DeepEqual(bundle.RopeScaling, ref.RopeScaling) {
		c.FailWith("the bundle's config.json gives rope_scaling %s, the reference's %s: %s's RoPE table is held to the reference's, so it cannot match the bundle's",
			scalingText(bundle.RopeScaling), scalingText(ref.RopeScaling), c.Module)
	}
}

func scalingText(s *model.RopeScaling) string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("%+v", *s)
}

// Warn records a finding that does not fail the gate: something of the
// folder phase0 could not judge.
func (c *Constants) Warn(format string, args ...any) {
	c.Status = verdict.Worst(c.Status, verdict.Warn)
	c.Find(format, args...)
}

// Conclude says what was judged beyond the constants, and puts the first
// finding of a section that did not pass into its summary. A gate that
// found nothing to check is a WARN, not a PASS: the module's constants
// come from somewhere phase0 did not look.
func (c *Constants) Conclude() {
	if c.Behaviour != nil {
		from := ""
		if c.RopeFrom != "" {
			from = " (" + filepath.Base(c.RopeFrom) + "'s, which the folder uses)"
		}
		c.Summary += "; RoPE table" + from + " judged by behaviour"
	}
	if len(c.Checked) == 0 && c.Behaviour == nil && c.Status == verdict.Pass {
		c.Status = verdict.Warn
		c.Find("%s hard-codes no config constant, defines no *_config() function or config class and no RoPE table: nothing of gate 3 could be checked", c.Module)
	}
	if c.Status != verdict.Pass {
		c.Summary = c.Summary + "; " + c.Findings[0]
	}
}
