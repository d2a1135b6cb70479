package configgate

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/testenv"
	"phase0/model"
	"phase0/scaffold"
	"phase0/verdict"
)

// realFacts asks the real phase0_shim.facts (and so the real transformers)
// about a model folder and, when module is set, a generated weights module.
func realFacts(t *testing.T, module, modelDir string) (*GeneratedFacts, *TransformersFacts) {
	t.Helper()
	script := `import json, sys
from phase0_shim import facts
gen = facts.generated_config_facts(sys.argv[1]) if sys.argv[1] else None
print(json.dumps({"generated": gen, "transformers": facts.transformers_facts(sys.argv[2])}))`
	cmd := exec.Command(testenv.Python(t), "-c", script, module, modelDir)
	cmd.Dir = testenv.PyShim()
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("facts: %v\n%s", err, stderr)
	}
	var f struct {
		Generated    *GeneratedFacts    `json:"generated"`
		Transformers *TransformersFacts `json:"transformers"`
	}
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatal(err)
	}
	return f.Generated, f.Transformers
}

// editedCopy copies a tiny model's config.json (the facts need no weights)
// and applies edit to its keys.
func editedCopy(t *testing.T, family string, edit func(map[string]any)) (string, *model.Analysis) {
	t.Helper()
	src := filepath.Join(testenv.TinyModels(t), family)
	data, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	data, _ = json.Marshal(m)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := model.ParseRaw(data)
	if err != nil {
		t.Fatal(err)
	}
	a := model.Analyze(raw)
	if a.Rejected() {
		t.Fatalf("rejected: %+v", a.Rejections)
	}
	return dir, a
}

// generate renders the real weights module for a and returns its path.
func generate(t *testing.T, a *model.Analysis, edit func(string) string) string {
	t.Helper()
	files, err := scaffold.Render(scaffold.Spec{Config: *a.Config, Family: a.Family, Name: "drift", ModelID: "test/drift", OnHub: true, AttentionFallback: true})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "drift_weights.py")
	text := string(files[0].Data)
	if edit != nil {
		text = edit(text)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDriftCasesAgree: the two cases where hand-kept readers drifted. Go's
// extraction, the generated LlamaConfig() and transformers all agree.
func TestDriftCasesAgree(t *testing.T) {
	for _, tc := range []struct {
		name, family string
		edit         func(map[string]any)
		check        func(*model.Config) bool
	}{
		{"qwen3 without head_dim", "qwen3", func(m map[string]any) { delete(m, "head_dim") },
			func(c *model.Config) bool { return c.HeadDim == 128 }},
		{"mistral with attention_bias", "mistral", func(m map[string]any) { m["attention_bias"] = true },
			func(c *model.Config) bool { return !c.QKVBias }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, a := editedCopy(t, tc.family, tc.edit)
			if !tc.check(a.Config) {
				t.Fatalf("Go extracted %+v", a.Config)
			}
			gen, tf := realFacts(t, generate(t, a, nil), dir)
			c := New()
			if err := c.Generated(a.Config, gen, Module{File: "drift_weights.py", Generated: true}); err != nil {
				t.Fatal(err)
			}
			if err := c.Transformers(a.Config, tf); err != nil {
				t.Fatal(err)
			}
			if c.Status != verdict.Pass {
				t.Fatalf("sources disagree:\n%s", strings.Join(c.Findings, "\n"))
			}
			if len(c.Checked) < 25 {
				t.Errorf("only %d checks: %v", len(c.Checked), c.Checked)
			}
		})
	}
}

// TestWrongGeneratedConfigIsCaught edits the generated module as a hand
// process would get it wrong; gate 3 names the field and both values.
func TestWrongGeneratedConfigIsCaught(t *testing.T) {
	dir, a := editedCopy(t, "qwen3", func(map[string]any) {})
	module := generate(t, a, func(s string) string {
		return strings.Replace(s, "    head_dim: int = 32", "    head_dim: int = 16", 1)
	})
	gen, tf := realFacts(t, module, dir)
	c := New()
	if err := c.Generated(a.Config, gen, Module{File: "drift_weights.py", Generated: true}); err != nil {
		t.Fatal(err)
	}
	if err := c.Transformers(a.Config, tf); err != nil {
		t.Fatal(err)
	}
	if c.Status != verdict.Fail || len(c.Mismatches) != 1 {
		t.Fatalf("status %s, mismatches %+v", c.Status, c.Mismatches)
	}
	m := c.Mismatches[0]
	if m.Field != "head_dim" || m.Source != SourceGenerated || !strings.Contains(m.Message, "is 16") || !strings.Contains(m.Message, "gives 32") {
		t.Errorf("finding %+v does not name the field, the source and both values", m)
	}
}

// TestTransformersDisagreementIsCaught: a Config that says what transformers
// does not build (a Qwen2 whose QKV bias a reader failed to extract).
func TestTransformersDisagreementIsCaught(t *testing.T) {
	dir, a := editedCopy(t, "qwen2", func(map[string]any) {})
	cfg := *a.Config
	cfg.QKVBias = false // what a reader that ignores attention_bias would extract
	_, tf := realFacts(t, "", dir)
	c := New()
	if err := c.Transformers(&cfg, tf); err != nil {
		t.Fatal(err)
	}
	fields := map[string]bool{}
	for _, m := range c.Mismatches {
		fields[m.Field] = true
	}
	if !fields["qkv_bias"] || !fields["parameters"] {
		t.Fatalf("mismatches %+v, want qkv_bias and the parameter set", c.Mismatches)
	}
}

func TestGeneratedFieldTypes(t *testing.T) {
	cfg := &model.Config{NLayers: 2, EmbDim: 64, NHeads: 4, NKVHeads: 2, HeadDim: 16, HiddenDim: 128, VocabSize: 512,
		RopeBase: 10000, RMSNormEps: 1e-5, HiddenAct: "silu", TieWordEmbeddings: true}
	good := map[string]string{"n_layers": "2", "emb_dim": "64", "n_heads": "4", "n_kv_heads": "2", "head_dim": "16",
		"hidden_dim": "128", "vocab_size": "512", "rope_base": "10000.0", "rms_norm_eps": "1e-05",
		"tie_word_embeddings": "true", "dtype": `"bfloat16"`}
	for _, tc := range []struct {
		field, value string // "" value: delete the field
		want         string // "" = pass
	}{
		{"", "", ""},
		{"n_layers", "2.0", "not an integer"},
		{"tie_word_embeddings", "1", "not a bool"},
		{"rope_base", "500000.0", "rope_base is 500000.0"},
		{"qkv_bias", "true", "qkv_bias is true"},
		{"rope_scaling", `{"rope_type": "default"}`, ""},
		{"rope_scaling", `{"rope_type": "linear", "factor": 2.0}`, "rope_scaling"},
		{"vocab_size", "", "has no field vocab_size"},
	} {
		fields := map[string]json.RawMessage{}
		for k, v := range good {
			fields[k] = json.RawMessage(v)
		}
		if tc.field != "" {
			if tc.value == "" {
				delete(fields, tc.field)
			} else {
				fields[tc.field] = json.RawMessage(tc.value)
			}
		}
		c := New()
		if err := c.Generated(cfg, &GeneratedFacts{Class: "LlamaConfig", Fields: fields}, Module{File: "x_weights.py", Generated: true}); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(c.Findings, "\n")
		if (tc.want == "") != (c.Status == verdict.Pass) || (tc.want != "" && !strings.Contains(text, tc.want)) {
			t.Errorf("%s=%s: status %s, findings %q, want %q", tc.field, tc.value, c.Status, text, tc.want)
		}
	}
}
