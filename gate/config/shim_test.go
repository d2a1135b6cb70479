package config_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/gate/config"
	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/scaffold"
	"phase0/python/ops/opstest"
	"phase0/read/model"
	"phase0/wire"
)

// The tests below ask the real phase0_shim (and so the real transformers)
// through the ops the orchestrator uses, in one worker shared by the test
// binary: torch is imported once, not once per question.
func TestMain(m *testing.M) { os.Exit(opstest.Main(m)) }

// realFacts asks the real phase0_shim.facts about a model folder and, when
// module is set, a generated weights module.
func realFacts(t *testing.T, module, modelDir string) (*wire.GeneratedFacts, *wire.TransformersFacts) {
	t.Helper()
	f, err := opstest.Client(t).ConfigFacts(context.Background(), wire.ModuleArgs{WeightsModule: module, ModelDir: modelDir})
	if err != nil {
		t.Fatalf("config_facts: %v", err)
	}
	return f.Generated, f.Transformers
}

// analyze is what phase0 extracts from a config.json.
func analyze(t *testing.T, data []byte) *model.Analysis {
	t.Helper()
	raw, err := model.ParseRaw(data)
	if err != nil {
		t.Fatal(err)
	}
	return model.Analyze(raw)
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
	a := analyze(t, data)
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
			c := config.New()
			if err := c.Generated(a.Config, gen, config.Module{File: "drift_weights.py", Generated: true}); err != nil {
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
	c := config.New()
	if err := c.Generated(a.Config, gen, config.Module{File: "drift_weights.py", Generated: true}); err != nil {
		t.Fatal(err)
	}
	if err := c.Transformers(a.Config, tf); err != nil {
		t.Fatal(err)
	}
	if c.Status != verdict.Fail || len(c.Mismatches) != 1 {
		t.Fatalf("status %s, mismatches %+v", c.Status, c.Mismatches)
	}
	m := c.Mismatches[0]
	if m.Field != "head_dim" || m.Source != config.SourceGenerated || !strings.Contains(m.Message, "is 16") || !strings.Contains(m.Message, "gives 32") {
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
	c := config.New()
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

// upstream is a fixture folder written in the style of mlir-air's hand-written models.
func upstream(name string) (weights, helpers string) {
	dir := filepath.Join(testenv.PyShim(), "tests", "data", "upstream", name)
	return filepath.Join(dir, name+"_weights.py"), filepath.Join(dir, name+"_cpu_helpers.py")
}

// TestBehaviourOfUpstreamStyleModules: hand-written modules in upstream's
// style, on checkpoints transformers wrote. Qwen's float64 tables are within
// one bf16 step of transformers' (a note); the Llama table that ignores
// llama3 scaling fails naming the scaling and the first position; helpers
// whose hard-coded eps is another model's fail naming the eps they behave as.
func TestBehaviourOfUpstreamStyleModules(t *testing.T) {
	models := testenv.TinyModels(t)
	for _, tc := range []struct {
		name, folder, model string
		editHelpers         func(string) string
		fields              []string // fields of the findings, in order; nil = PASS
		want                []string // substrings of the findings (or of the notes on PASS)
	}{
		{"qwen3_0_6b", "qwen3_0_6b", "qwen3", nil, nil, []string{"has no field rms_norm_eps (config.json: 1e-06): judged by what the module does: qwen3_0_6b_cpu_helpers.py.rms_norm (its default eps) matches", "behaves as eps ≈ 1e-06"}},
		{"qwen25_0_5b", "qwen25_0_5b", "qwen2", nil, nil, []string{"rms_norm (its default eps) matches transformers' RMSNorm with rms_norm_eps 1e-06"}},
		{"llama32_1b", "llama32_1b", "llama-llama3", nil, []string{"rope_scaling"},
			[]string{"ignores config.json's rope scaling (llama3, factor 32, low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 64)", "first beyond one step at position", "bf16 steps", "plain RoPE with rope_theta 500000"}},
		{"llama32_1b with Qwen's eps", "llama32_1b", "llama-llama3", func(s string) string { return strings.Replace(s, "eps=1e-5", "eps=1e-6", 1) }, []string{"rope_scaling", "rms_norm_eps"},
			[]string{"rms_norm_eps 1e-05", "behaves as eps ≈ 1e-06"}},
		{"qwen3_0_6b with Llama's eps", "qwen3_0_6b", "qwen3", func(s string) string { return strings.ReplaceAll(s, "eps=1e-6", "eps=1e-5") }, []string{"rms_norm_eps", "rms_norm_eps"},
			[]string{"qk_norm_per_head (its default eps) differs", "behaves as eps ≈ 1e-05"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			weights, helpers := upstream(tc.folder)
			if tc.editHelpers != nil {
				b, err := os.ReadFile(helpers)
				if err != nil {
					t.Fatal(err)
				}
				helpers = filepath.Join(t.TempDir(), filepath.Base(helpers))
				if err := os.WriteFile(helpers, []byte(tc.editHelpers(string(b))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			modelDir := filepath.Join(models, tc.model)
			facts, err := opstest.Client(t).BehaviourFacts(context.Background(), wire.BehaviourArgs{WeightsModule: weights, HelpersModule: helpers, ModelDir: modelDir, MaxSeq: 64})
			if err != nil {
				t.Fatalf("behaviour_facts: %v", err)
			}
			data, err := os.ReadFile(filepath.Join(modelDir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			a := analyze(t, data)
			c := config.New()
			// Upstream's Config carries neither eps nor rope scaling.
			carried := map[string]json.RawMessage{}
			b, err := json.Marshal(a.Config)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &carried); err != nil {
				t.Fatal(err)
			}
			delete(carried, "rms_norm_eps")
			delete(carried, "rope_scaling")
			if err := c.Generated(a.Config, &wire.GeneratedFacts{Class: "LlamaConfig", Fields: carried}, config.Module{File: tc.folder + "_weights.py"}); err != nil {
				t.Fatal(err)
			}
			c.Behaviour(a.Config, facts, filepath.Base(weights))
			var fields []string
			for _, m := range c.Mismatches {
				fields = append(fields, m.Field)
			}
			if strings.Join(fields, ",") != strings.Join(tc.fields, ",") || (tc.fields == nil) != (c.Status == verdict.Pass) {
				t.Fatalf("status %s, fields %q, want %q:\n%s\nnotes:\n%s", c.Status, fields, tc.fields, strings.Join(c.Findings, "\n"), strings.Join(c.Notes, "\n"))
			}
			text := strings.Join(append(c.Findings, c.Notes...), "\n")
			t.Logf("gate 3 says:\n%s", text)
			for _, check := range []string{"behaviour.rope_table", "behaviour.rms_norm"} {
				if !slices.Contains(c.Checked, check) {
					t.Errorf("checked %v lacks %s", c.Checked, check)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("gate 3 does not say %q:\n%s", w, text)
				}
			}
		})
	}
}
