package config

import (
	"errors"
	"math"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/read/model"
	"phase0/wire"
)

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
		facts *wire.TieFacts
		want  string // finding substring; "" = PASS
	}{
		{"tied, same array", true, &wire.TieFacts{SameObject: true, Elements: 8, Differing: n(0)}, ""},
		{"tied, equal copy", true, &wire.TieFacts{Elements: 8, Differing: n(0)}, ""},
		{"tied, own matrix", true, &wire.TieFacts{Elements: 8, Differing: n(3)}, "differs from its embed_table at 3 of 8 elements"},
		{"tied, other shape", true, &wire.TieFacts{Elements: 8}, "another shape"},
		{"untied, own matrix", false, &wire.TieFacts{Elements: 8, Differing: n(8)}, ""},
		{"untied, embeddings reused", false, &wire.TieFacts{SameObject: true, Elements: 8, Differing: n(0)}, "does not tie the embeddings but the loader's lm_head is embed_table"},
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
