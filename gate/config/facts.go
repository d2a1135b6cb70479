package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"phase0/read/model"
	"phase0/wire"
)

// kind says how a field's values are compared.
type kind int

const (
	kindExact   kind = iota // JSON values equal after decoding
	kindInt                 // an integer literal, equal
	kindFloat               // a number, equal as float64
	kindBool                // true or false, equal
	kindScaling             // rope scaling, normalised
	kindIgnore              // not comparable across sources
)

// fieldKinds keys model.Config's JSON names. A field added to model.Config
// and missing here is still compared, exactly.
var fieldKinds = map[string]kind{
	"n_layers": kindInt, "emb_dim": kindInt, "n_heads": kindInt, "n_kv_heads": kindInt, "head_dim": kindInt,
	"hidden_dim": kindInt, "vocab_size": kindInt,
	"rope_base": kindFloat, "rms_norm_eps": kindFloat,
	"tie_word_embeddings": kindBool, "qkv_bias": kindBool, "qk_norm": kindBool,
	"rope_scaling": kindScaling,
	// dtype is the checkpoint's storage dtype in model.Config but the compute
	// dtype (always bfloat16) in LlamaConfig: the same name, not the same fact.
	"dtype": kindIgnore,
}

// impliedWhenAbsent are LlamaConfig fields whose absence has a meaning:
// upstream's Llama template has none of them (no bias, no QK norm, silu).
var impliedWhenAbsent = map[string]json.RawMessage{
	"qkv_bias": json.RawMessage("false"), "qk_norm": json.RawMessage("false"),
	"hidden_act": json.RawMessage(`"silu"`),
}

// judgedByBehaviour are the fields a hand-written Config may leave out
// because the module decides them elsewhere: upstream's helpers hard-code
// eps, its loaders tie at load time, its RoPE table computes what it
// computes. Gate 3 then judges what the module does (Behaviour, Tie), and
// notes the outcome next to the absent field.
var judgedByBehaviour = map[string]bool{"rms_norm_eps": true, "tie_word_embeddings": true, "rope_scaling": true, "rope_base": true}

// Module is the weights module whose LlamaConfig() gate 3 compares:
// phase0's own generated one, or a hand-written one (upstream's, or edited).
type Module struct {
	File      string // <name>_weights.py
	Generated bool
}

// label names the module's Config in findings; a hand-written class is
// named by its file, never as generated.
func (m Module) label(class string) string {
	if m.Generated {
		return "generated " + class + "()"
	}
	return class + "() of " + m.File + " (not written by phase0)"
}

func (m Module) source() string {
	if m.Generated {
		return SourceGenerated
	}
	return SourceModule
}

// configFields is model.Config as its JSON names and values: the field list
// comes from the type itself, not from a hand-kept copy.
func configFields(cfg *model.Config) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	return m, json.Unmarshal(b, &m)
}

// Generated compares every field module's LlamaConfig() carries with cfg.
// A field it lacks fails, except those judgedByBehaviour and those
// impliedWhenAbsent.
func (c *Consistency) Generated(cfg *model.Config, g *wire.GeneratedFacts, module Module) error {
	want, err := configFields(cfg)
	if err != nil {
		return err
	}
	who, src := module.label(g.Class), module.source()
	c.source(src)
	for _, field := range slices.Sorted(maps.Keys(want)) {
		k := fieldKinds[field]
		if k == kindIgnore {
			continue
		}
		got, ok := g.Fields[field]
		note := ""
		if !ok {
			if _, judged := judgedByBehaviour[field]; judged {
				if c.absent == nil {
					c.absent = map[string]string{}
				}
				c.absent[field] = fmt.Sprintf("%s has no field %s (config.json: %s)", who, field, shown(want[field]))
				continue
			}
			implied, has := impliedWhenAbsent[field]
			if !has {
				c.check(src, field)
				c.add(Finding{Field: field, Source: src, Config: decoded(want[field]), Actual: nil,
					Message: fmt.Sprintf("%s has no field %s; phase0 extracted %s", who, field, want[field])})
				continue
			}
			got, note = implied, " (absent, implied)"
		}
		c.check(src, field)
		if same, why := equal(k, want[field], got); !same {
			c.add(Finding{Field: field, Source: src, Config: decoded(want[field]), Actual: decoded(got),
				Message: fmt.Sprintf("%s: %s is %s%s but config.json gives %s%s", who, field, got, note, want[field], why)})
		}
	}
	return nil
}

// Transformers compares what transformers resolved with cfg: each Config
// field from AutoConfig's attributes (QKV bias and QK norm from the modules
// it builds), and the parameter set both ways against model.ExpectedTensors.
func (c *Consistency) Transformers(cfg *model.Config, t *wire.TransformersFacts) error {
	want, err := configFields(cfg)
	if err != nil {
		return err
	}
	got, err := resolved(t)
	if err != nil {
		return fmt.Errorf("transformers facts: %w", err)
	}
	c.source(SourceTransformers)
	for _, field := range slices.Sorted(maps.Keys(want)) {
		k := fieldKinds[field]
		v, ok := got[field]
		if k == kindIgnore || !ok {
			continue
		}
		c.check(SourceTransformers, field)
		if same, why := equal(k, want[field], v); !same {
			c.add(Finding{Field: field, Source: SourceTransformers, Config: decoded(want[field]), Actual: decoded(v),
				Message: fmt.Sprintf("transformers %s resolves %s to %s but phase0 extracted %s%s", t.Version, field, v, want[field], why)})
		}
	}

	c.check(SourceTransformers, "parameters")
	expected := model.ExpectedTensors(cfg)
	seen := make(map[string]bool, len(expected))
	var diffs []string
	for _, spec := range expected {
		seen[spec.Name] = true
		shape, ok := t.Parameters[spec.Name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s %v: phase0 expects it, transformers' %s has no such parameter", spec.Name, spec.Shape, t.Class))
		case !slices.Equal(shape, spec.Shape):
			diffs = append(diffs, fmt.Sprintf("%s: phase0 expects shape %v, transformers builds %v", spec.Name, spec.Shape, shape))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.Parameters)) {
		if !seen[name] {
			diffs = append(diffs, fmt.Sprintf("%s %v: transformers' %s has this parameter, phase0 does not expect it", name, t.Parameters[name], t.Class))
		}
	}
	for _, d := range diffs {
		c.add(Finding{Field: "parameters", Source: SourceTransformers, Message: d})
	}
	return nil
}

// resolved maps transformers' attribute names and modelling decisions onto
// model.Config's field names.
func resolved(t *wire.TransformersFacts) (map[string]json.RawMessage, error) {
	a := t.Attributes
	out := map[string]json.RawMessage{}
	for field, attr := range map[string]string{
		"n_layers": "num_hidden_layers", "emb_dim": "hidden_size", "n_heads": "num_attention_heads",
		"n_kv_heads": "num_key_value_heads", "head_dim": "head_dim", "hidden_dim": "intermediate_size",
		"vocab_size": "vocab_size", "tie_word_embeddings": "tie_word_embeddings", "rms_norm_eps": "rms_norm_eps",
		"hidden_act": "hidden_act",
	} {
		if v, ok := a[attr]; ok && !isNull(v) {
			out[field] = v
		}
	}
	// The modelling code falls back to these when the config class has no value.
	if _, ok := out["n_kv_heads"]; !ok {
		if v, ok := out["n_heads"]; ok {
			out["n_kv_heads"] = v
		}
	}
	if _, ok := out["head_dim"]; !ok {
		var emb, heads int64
		if json.Unmarshal(out["emb_dim"], &emb) == nil && json.Unmarshal(out["n_heads"], &heads) == nil && heads > 0 {
			out["head_dim"] = json.RawMessage(fmt.Sprint(emb / heads))
		}
	}
	// transformers 5 keeps theta and scaling in rope_parameters; 4 at the top level.
	var params map[string]json.RawMessage
	if v, ok := a["rope_parameters"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &params); err != nil {
			return nil, fmt.Errorf("rope_parameters is not an object: %s", v)
		}
	}
	switch {
	case params["rope_theta"] != nil:
		out["rope_base"] = params["rope_theta"]
	case a["rope_theta"] != nil && !isNull(a["rope_theta"]):
		out["rope_base"] = a["rope_theta"]
	}
	if params != nil {
		b, _ := json.Marshal(params)
		out["rope_scaling"] = b
	} else if v, ok := a["rope_scaling"]; ok {
		out["rope_scaling"] = v
	}
	l0 := "model.layers.0.self_attn."
	_, bias := t.Parameters[l0+"q_proj.bias"]
	_, norm := t.Parameters[l0+"q_norm.weight"]
	out["qkv_bias"] = json.RawMessage(fmt.Sprint(bias))
	out["qk_norm"] = json.RawMessage(fmt.Sprint(norm))
	return out, nil
}

// shown is a JSON value as a finding prints it: numbers in Go's shortest
// form (1e-06, not 0.000001), anything else as JSON.
func shown(v json.RawMessage) string {
	var f float64
	if json.Unmarshal(v, &f) == nil {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return string(bytes.TrimSpace(v))
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// equal compares two JSON values by kind; why explains a type mismatch.
func equal(k kind, want, got json.RawMessage) (bool, string) {
	switch k {
	case kindInt:
		if !isIntLiteral(got) {
			return false, " (not an integer)"
		}
		return string(bytes.TrimSpace(want)) == string(bytes.TrimSpace(got)), ""
	case kindFloat:
		var a, b float64
		if json.Unmarshal(want, &a) != nil || json.Unmarshal(got, &b) != nil {
			return false, " (not a number)"
		}
		return a == b, ""
	case kindBool:
		var a, b bool
		if json.Unmarshal(got, &b) != nil {
			return false, " (not a bool)"
		}
		json.Unmarshal(want, &a)
		return a == b, ""
	case kindScaling:
		a, errA := normalScaling(want)
		b, errB := normalScaling(got)
		if errA != nil || errB != nil {
			return false, " (not a rope scaling object)"
		}
		return equalScaling(a, b), ""
	}
	var a, b any
	if json.Unmarshal(want, &a) != nil || json.Unmarshal(got, &b) != nil {
		return false, ""
	}
	return fmt.Sprint(a) == fmt.Sprint(b), ""
}

func isIntLiteral(v json.RawMessage) bool {
	s := strings.TrimSpace(string(v))
	if s == "" || strings.ContainsAny(s, ".eE") {
		return false
	}
	var n json.Number
	return json.Unmarshal(v, &n) == nil && s[0] != '"'
}

// normalScaling is a rope scaling without rope_theta, with "type" read as
// "rope_type", and nil for plain RoPE.
func normalScaling(v json.RawMessage) (map[string]any, error) {
	if len(v) == 0 || isNull(v) {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, err
	}
	delete(m, "rope_theta")
	if t, ok := m["type"]; ok {
		if _, has := m["rope_type"]; !has {
			m["rope_type"] = t
		}
		delete(m, "type")
	}
	if t, _ := m["rope_type"].(string); t == "" || t == "default" {
		if len(m) <= 1 {
			return nil, nil
		}
	}
	return m, nil
}

// equalScaling compares the keys both sides give meaning to: a key absent on
// one side counts only when the other side's value is non-zero.
func equalScaling(a, b map[string]any) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		va, vb := a[k], b[k]
		if fmt.Sprint(va) == fmt.Sprint(vb) {
			continue
		}
		if (va == nil && isZero(vb)) || (vb == nil && isZero(va)) {
			continue
		}
		return false
	}
	return true
}

func isZero(v any) bool {
	f, ok := v.(float64)
	return ok && f == 0
}

func decoded(v json.RawMessage) any {
	var out any
	if json.Unmarshal(v, &out) != nil {
		return string(v)
	}
	return out
}

// coreDims are the dimensions that make a checkpoint another model, not a
// misconfigured one: the loader's array shapes follow from them.
var coreDims = []string{"n_layers", "emb_dim", "n_heads", "n_kv_heads", "head_dim", "hidden_dim", "vocab_size"}

// CoreDimsDiffer lists each core dimension the module's LlamaConfig()
// carries with another value than cfg ("emb_dim 1024 (module) vs 64
// (checkpoint)"); empty when they agree.
func CoreDimsDiffer(cfg *model.Config, g *wire.GeneratedFacts) ([]string, error) {
	want, err := configFields(cfg)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, field := range coreDims {
		got, ok := g.Fields[field]
		if !ok {
			continue
		}
		if same, _ := equal(kindInt, want[field], got); !same {
			out = append(out, fmt.Sprintf("%s %s (module) vs %s (checkpoint)", field, got, want[field]))
		}
	}
	return out, nil
}
