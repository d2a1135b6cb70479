package configgate

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"phase0/internal/testenv"
	"phase0/model"
	"phase0/verdict"
)

// behaviourCase is one module, its helpers and a checkpoint to ask about.
type behaviourCase struct{ weights, helpers, modelDir string }

// realBehaviour asks the real phase0_shim.behaviour (and transformers) what
// each case's module and helpers do for its checkpoint, in one Python
// process (importing torch is most of the time).
func realBehaviour(t *testing.T, maxSeq int, cases ...behaviourCase) []*BehaviourFacts {
	t.Helper()
	script := `import json, sys
from phase0_shim import behaviour
out = []
for weights, helpers, model_dir in json.loads(sys.argv[2]):
    facts, arrays = behaviour.collect(weights, helpers, model_dir, int(sys.argv[1]))
    out.append({"facts": facts, "payload": arrays.tolist()})
print(json.dumps(out))`
	var args [][3]string
	for _, c := range cases {
		args = append(args, [3]string{c.weights, c.helpers, c.modelDir})
	}
	list, _ := json.Marshal(args)
	cmd := exec.Command(testenv.Python(t), "-c", script, strconv.Itoa(maxSeq), string(list))
	cmd.Dir = testenv.PyShim()
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("behaviour facts: %v\n%s", err, stderr)
	}
	var got []struct {
		Facts   json.RawMessage `json:"facts"`
		Payload []float32       `json:"payload"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	var facts []*BehaviourFacts
	for _, g := range got {
		b, err := DecodeBehaviour(g.Facts, g.Payload)
		if err != nil {
			t.Fatal(err)
		}
		facts = append(facts, b)
	}
	return facts
}

// upstream is a fixture folder written in the style of mlir-air's hand-written models.
func upstream(name string) (weights, helpers string) {
	dir := filepath.Join(testenv.PyShim(), "tests", "data", "upstream", name)
	return filepath.Join(dir, name+"_weights.py"), filepath.Join(dir, name+"_cpu_helpers.py")
}

func analysisOf(t *testing.T, modelDir string) *model.Analysis {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(modelDir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := model.ParseRaw(data)
	if err != nil {
		t.Fatal(err)
	}
	return model.Analyze(raw)
}

// TestBehaviourOfUpstreamStyleModules: hand-written modules in upstream's
// style, on checkpoints transformers wrote. Qwen's float64 tables are within
// one bf16 step of transformers' (a note); the Llama table that ignores
// llama3 scaling fails naming the scaling and the first position; helpers
// whose hard-coded eps is another model's fail naming the eps they behave as.
func TestBehaviourOfUpstreamStyleModules(t *testing.T) {
	models := testenv.TinyModels(t)
	cases := []struct {
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
	}
	var asks []behaviourCase
	for _, tc := range cases {
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
		asks = append(asks, behaviourCase{weights, helpers, filepath.Join(models, tc.model)})
	}
	facts := realBehaviour(t, 64, asks...)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := analysisOf(t, asks[i].modelDir)
			c := New()
			// Upstream's Config carries neither eps nor rope scaling.
			carried, err := configFields(a.Config)
			if err != nil {
				t.Fatal(err)
			}
			delete(carried, "rms_norm_eps")
			delete(carried, "rope_scaling")
			if err := c.Generated(a.Config, &GeneratedFacts{Class: "LlamaConfig", Fields: carried}, Module{File: tc.folder + "_weights.py"}); err != nil {
				t.Fatal(err)
			}
			c.Behaviour(a.Config, facts[i], filepath.Base(asks[i].weights))
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

func TestDecodeBehaviour(t *testing.T) {
	good := `{"rope": {"seq_len": 1, "head_dim": 2, "rope_type": "default", "defined": true}, "helpers_module": null, "helpers_found": false,
"norms": [], "arrays": [{"name": "a", "shape": [1, 2]}, {"name": "b", "shape": [3]}]}`
	for _, tc := range []struct {
		name, raw string
		payload   int
		want      string // "" = decodes
	}{
		{"good", good, 5, ""},
		{"payload too long", good, 6, "describe 5 floats, 6 received"},
		{"payload too short", good, 4, "need 5 floats, 4 received"},
		{"renamed field", strings.Replace(good, `"defined"`, `"is_defined"`, 1), 5, "unknown field"},
		{"negative dimension", strings.Replace(good, "[3]", "[-3]", 1), 5, "shape [-3]"},
		{"huge shape", strings.Replace(good, "[3]", "[4294967296, 4294967296, 4294967296]", 1), 5, "larger than"},
		{"duplicate name", strings.Replace(good, `"name": "b"`, `"name": "a"`, 1), 5, "described twice"},
		{"not JSON", `{"rope": `, 0, "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := DecodeBehaviour([]byte(tc.raw), make([]float32, tc.payload))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if a, ok := b.Array("b"); !ok || len(a.Data) != 3 {
					t.Errorf("array b = %+v", a)
				}
				return
			}
			if !errors.Is(err, ErrBadBehaviour) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// ropeTable is [cos | sin] for plain RoPE at float32 angles, as transformers computes it.
func ropeTable(seq, headDim int, theta float64, scale func(int) float64) []float32 {
	half := headDim / 2
	out := make([]float32, seq*headDim)
	for p := range seq {
		for i := range half {
			inv := float32(1 / math.Pow(theta, float64(2*i)/float64(headDim)) * scale(i))
			angle := float64(float32(p) * inv)
			out[p*headDim+i] = float32(math.Cos(angle))
			out[p*headDim+half+i] = float32(math.Sin(angle))
		}
	}
	return out
}

// TestRopeJudgement: the rules on synthetic tables, no Python.
func TestRopeJudgement(t *testing.T) {
	const seq, hd = 64, 16
	one := func(int) float64 { return 1 }
	plain := ropeTable(seq, hd, 10000, one)
	scaled := ropeTable(seq, hd, 10000, func(i int) float64 { return map[bool]float64{true: 1.0 / 8, false: 1}[i >= 4] })
	llama := &model.RopeScaling{RopeType: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	nudged := append([]float32{}, plain...)
	nudged[5*hd+3] += 1.0 / 256 // one step, at one element
	wrong := append([]float32{}, plain...)
	wrong[7*hd+hd/2+2] += 3.0 / 256 // sin_2 at position 7, three steps
	for _, tc := range []struct {
		name      string
		scaling   *model.RopeScaling
		ref, mod  []float32
		field     string // "" = PASS
		wantNotes string
		want      []string
	}{
		{"equal", nil, plain, plain, "", "", nil},
		{"one step", nil, plain, nudged, "", "1 of 1024 elements differ from transformers' rotary embedding by one bf16 step", nil},
		{"three steps", nil, plain, wrong, "rope_table", "", []string{"first beyond one step at position 7 (sin_2)", "3.0 bf16 steps", "plain RoPE with rope_theta 10000"}},
		{"scaling ignored", llama, scaled, plain, "rope_scaling", "", []string{"ignores config.json's rope scaling (llama3, factor 8", "original_max_position_embeddings 8192"}},
		{"neither", llama, scaled, wrong, "rope_table", "", []string{"config.json's rope scaling is llama3", "not plain RoPE either"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := append(append([]float32{}, tc.ref...), tc.mod...)
			arrays := `[{"name": "rope.transformers", "shape": [64, 16]}, {"name": "rope.module", "shape": [64, 16]}]`
			rt := "default"
			if tc.scaling != nil {
				payload = append(payload, plain...)
				arrays = `[{"name": "rope.transformers", "shape": [64, 16]}, {"name": "rope.module", "shape": [64, 16]}, {"name": "rope.transformers_unscaled", "shape": [64, 16]}]`
				rt = "llama3"
			}
			raw := `{"rope": {"seq_len": 64, "head_dim": 16, "rope_type": "` + rt + `", "defined": true, "type": "ndarray", "dtype": "bfloat16", "shape": [64, 16]},
"helpers_module": "x_cpu_helpers.py", "helpers_found": true, "norms": [], "arrays": ` + arrays + `}`
			b, err := DecodeBehaviour([]byte(raw), payload)
			if err != nil {
				t.Fatal(err)
			}
			c := New()
			c.Behaviour(&model.Config{RopeBase: 10000, RopeScaling: tc.scaling, RMSNormEps: 1e-5}, b, "x_weights.py")
			if tc.field == "" {
				if c.Status != verdict.Pass || !strings.Contains(strings.Join(c.Notes, "\n"), tc.wantNotes) {
					t.Fatalf("status %s, findings %q, notes %q", c.Status, c.Findings, c.Notes)
				}
				return
			}
			if c.Status != verdict.Fail || len(c.Mismatches) != 1 || c.Mismatches[0].Field != tc.field {
				t.Fatalf("status %s, mismatches %+v, want one on %s", c.Status, c.Mismatches, tc.field)
			}
			for _, w := range tc.want {
				if !strings.Contains(c.Mismatches[0].Message, w) {
					t.Errorf("%q does not say %q", c.Mismatches[0].Message, w)
				}
			}
		})
	}
}

func TestTieJudgement(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name  string
		tied  bool
		facts *TieFacts
		want  string // finding substring; "" = PASS
	}{
		{"tied, same array", true, &TieFacts{SameObject: true, Elements: 8, Differing: n(0)}, ""},
		{"tied, equal copy", true, &TieFacts{Elements: 8, Differing: n(0)}, ""},
		{"tied, own matrix", true, &TieFacts{Elements: 8, Differing: n(3)}, "differs from its embed_table at 3 of 8 elements"},
		{"tied, other shape", true, &TieFacts{Elements: 8}, "another shape"},
		{"untied, own matrix", false, &TieFacts{Elements: 8, Differing: n(8)}, ""},
		{"untied, embeddings reused", false, &TieFacts{SameObject: true, Elements: 8, Differing: n(0)}, "does not tie the embeddings but the loader's lm_head is embed_table"},
		{"no arrays", false, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New()
			c.Tie(&model.Config{TieWordEmbeddings: tc.tied}, tc.facts, nil, nil)
			text := strings.Join(c.Findings, "\n")
			if (tc.want == "") != (c.Status == verdict.Pass) || !strings.Contains(text, tc.want) {
				t.Errorf("status %s, findings %q, want %q", c.Status, text, tc.want)
			}
		})
	}
}

// TestIncompleteProbe: facts that do not describe a probe fail the check,
// whatever their numbers (a zero width must not divide).
func TestIncompleteProbe(t *testing.T) {
	for _, norm := range []string{
		`{"helper": "rms_norm", "defined": true, "width": 0, "groups": 1, "eps": 1e-6, "eps_argument": null}`,
		`{"helper": "rms_norm", "defined": true, "width": 4, "groups": 0, "eps": 1e-6, "eps_argument": null}`,
		`{"helper": "rms_norm", "defined": true, "width": 4, "groups": 1, "eps": 1e-6, "eps_argument": null}`,
	} {
		raw := `{"rope": {"seq_len": 0, "head_dim": 0, "rope_type": "default", "defined": true, "type": "ndarray", "dtype": "bfloat16", "shape": [0, 0]},
"helpers_module": "x_cpu_helpers.py", "helpers_found": true, "norms": [` + norm + `], "arrays": [{"name": "rope.module", "shape": [0, 0]}, {"name": "rope.transformers", "shape": [0, 0]},
{"name": "norm.rms_norm.x", "shape": [0]}, {"name": "norm.rms_norm.weight", "shape": [0]}, {"name": "norm.rms_norm.transformers", "shape": [0]}, {"name": "norm.rms_norm.module", "shape": [0]}]}`
		b, err := DecodeBehaviour([]byte(raw), nil)
		if err != nil {
			t.Fatal(err)
		}
		c := New()
		c.Behaviour(&model.Config{RMSNormEps: 1e-6}, b, "x_weights.py")
		if c.Status != verdict.Fail || !strings.Contains(strings.Join(c.Findings, "\n"), "incomplete probe") {
			t.Errorf("%s: status %s, findings %q", norm, c.Status, c.Findings)
		}
	}
}

// FuzzBehaviour: whatever the worker sends, decoding and judging it never
// panics; facts that decode are judged.
func FuzzBehaviour(f *testing.F) {
	f.Add([]byte(`{"rope": {"seq_len": 1, "head_dim": 2, "rope_type": "llama3", "defined": true, "type": "ndarray", "dtype": "bfloat16", "shape": [1, 2]},
"helpers_module": "h.py", "helpers_found": true, "norms": [{"helper": "rms_norm", "defined": true, "width": 2, "groups": 1, "eps": 1e-6, "eps_argument": null}],
"arrays": [{"name": "rope.transformers", "shape": [1, 2]}, {"name": "rope.module", "shape": [1, 2]}, {"name": "rope.transformers_unscaled", "shape": [1, 2]},
{"name": "norm.rms_norm.x", "shape": [2, 2]}, {"name": "norm.rms_norm.weight", "shape": [2]}, {"name": "norm.rms_norm.transformers", "shape": [2, 2]}, {"name": "norm.rms_norm.module", "shape": [2, 2]}]}`), uint16(20))
	f.Add([]byte(`{"rope": {"seq_len": 3, "head_dim": 0, "defined": true, "type": "ndarray", "shape": [3, 0]}, "helpers_found": true, "norms": [{"helper": "qk_norm_per_head", "defined": true, "width": 0, "groups": 0}], "arrays": []}`), uint16(0))
	f.Fuzz(func(t *testing.T, raw []byte, n uint16) {
		payload := make([]float32, n)
		for i := range payload {
			payload[i] = float32(i%7) - 3
		}
		b, err := DecodeBehaviour(raw, payload)
		if err != nil {
			return
		}
		c := New()
		c.Behaviour(&model.Config{RopeBase: 10000, RMSNormEps: 1e-6, RopeScaling: &model.RopeScaling{RopeType: "llama3", Factor: 8}}, b, "x_weights.py")
		c.Behaviour(&model.Config{RopeBase: 10000, RMSNormEps: 1e-6}, b, "x_weights.py")
	})
}
