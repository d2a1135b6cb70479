package scaffold

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/read/model"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current templates")

func TestDeriveName(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"Qwen/Qwen3-0.6B", "qwen3_0_6b"},
		{"meta-llama/Llama-3.2-1B", "llama_3_2_1b"},
		{"meta-llama/Llama-3.2-1B-Instruct", "llama_3_2_1b_instruct"},
		{"mistralai/Mistral-7B-v0.1", "mistral_7b_v0_1"},
		{"Qwen/Qwen2.5-0.5B-Instruct", "qwen2_5_0_5b_instruct"},
		{"HuggingFaceTB/SmolLM2-135M-Instruct", "smollm2_135m_instruct"},
		{"org/--Weird__Name..v2--", "weird_name_v2"},
		{"no-org-Model", "no_org_model"},
		{"/local/path/to/TinyLlama-1.1B/", "tinyllama_1_1b"},
		{"org/1.5B-Model", "model_1_5b_model"},
		{"org/Модель-1B", "model_1b"},
		{"", ""},
	} {
		if got := DeriveName(tc.id); got != tc.want {
			t.Errorf("DeriveName(%q) = %q, want %q", tc.id, got, tc.want)
		}
	}
}

func TestPyFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{500000, "500000.0"}, {1e6, "1000000.0"}, {10000, "10000.0"}, {1e-5, "1e-05"}, {1e-6, "1e-06"},
		{0.0001, "0.0001"}, {32, "32.0"}, {0.5, "0.5"}, {1.5e16, "1.5e16"}, {0, "0.0"},
	} {
		if got := pyFloat(tc.f); got != tc.want {
			t.Errorf("pyFloat(%v) = %q, want %q", tc.f, got, tc.want)
		}
	}
}

// specFile is testdata/<family>/spec.json: the Config's own JSON fields
// beside the workspace names, with the family by name.
type specFile struct {
	model.Config
	Family     string `json:"family"`
	Name       string `json:"name"`
	ModelID    string `json:"model_id"`
	OnHub      bool   `json:"on_hub"`
	Revision   string `json:"revision"`
	Source     string `json:"source"`
	Checkpoint struct {
		Root string `json:"root"`
		Path string `json:"path"`
	} `json:"checkpoint"`
	ToolVersion       string `json:"tool_version"`
	AttentionFallback bool   `json:"attention_fallback"`
}

func loadSpec(t *testing.T, family string) Spec {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", family, "spec.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f specFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s/spec.json: %v", family, err)
	}
	fam, ok := model.FamilyNamed(f.Family)
	if !ok {
		t.Fatalf("%s/spec.json: unknown family %q", family, f.Family)
	}
	return Spec{Config: f.Config, Family: fam, Name: f.Name, ModelID: f.ModelID, OnHub: f.OnHub, Revision: f.Revision,
		Source: f.Source, Checkpoint: Checkpoint{Root: f.Checkpoint.Root, Path: f.Checkpoint.Path},
		ToolVersion: f.ToolVersion, AttentionFallback: f.AttentionFallback}
}

// TestGolden renders each family's tiny spec and compares every file with
// testdata/golden/<family>/ (go test ./output/scaffold -update rewrites them; the
// pytests run the golden Python files against transformers).
func TestGolden(t *testing.T) {
	for _, family := range []string{"llama", "mistral", "qwen2", "qwen3"} {
		t.Run(family, func(t *testing.T) {
			files, err := Render(loadSpec(t, family))
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", "golden", family)
			if *update {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range files {
				p := filepath.Join(dir, filepath.FromSlash(f.Path))
				if *update {
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, f.Data, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(p)
				if err != nil {
					t.Fatalf("%v (run go test ./output/scaffold -update)", err)
				}
				if !bytes.Equal(f.Data, want) {
					t.Errorf("%s differs from %s (run go test ./output/scaffold -update and review the diff)", f.Path, p)
				}
			}
		})
	}
}

// The generated files must carry only what applies to the model.
func TestRenderFamilySpecificParts(t *testing.T) {
	for _, tc := range []struct {
		family      string
		present     []string
		absent      []string
		helpersKept []string
	}{
		{"llama", []string{`"rope_type": "llama3"`, "default_factory=_default_rope_scaling", "rms_norm_eps: float = 1e-05",
			"def attention_reference(", "RMS_NORM_EPS = 1e-05"},
			[]string{"q_proj.bias", "q_norm", "- QKV bias:", "- QK-norm:", "head_dim 16 ≠", "qk_norm_per_head"},
			[]string{"rms_norm", "softmax", "attention_reference"}},
		{"mistral", []string{"rope_scaling: Optional[Dict[str, Any]] = None", "tie_word_embeddings: bool = False",
			"MODEL_REVISION: Optional[str] = None  # a local checkpoint has no hub revision", "Model: `Tiny-Mistral` (a local checkpoint;",
			"# The validated checkpoint's folder, relative to this file's folder.\nCHECKPOINT_PATH = \"../../models/Tiny-Mistral\"\n",
			`return os.path.normpath(os.path.join(here, *CHECKPOINT_PATH.split("/")))`},
			[]string{"def attention_reference(", "def softmax(", "q_proj.bias", "q_norm", "_default_rope_scaling", "huggingface.co", "CHECKPOINT_SOURCE"},
			[]string{"rms_norm"}},
		{"qwen2", []string{`"self_attn.q_proj.bias": ("bq", False)`, "rms_qkv_bias_rope_multi.py", `random_fields += ["bq", "bk", "bv"]`, "bq: np.ndarray  # (64,)", "bk: np.ndarray  # (32,)",
			"## Phase 2 prerequisites", "RoPE(q + bq) = RoPE(q) + RoPE(bq)", "RMS_NORM_EPS = 1e-06"},
			[]string{"q_norm", "qk_norm_per_head"},
			[]string{"rms_norm", "softmax", "attention_reference"}},
		{"qwen3", []string{`"self_attn.q_norm.weight": ("q_norm", False)`, "def qk_norm_per_head(", "- QK-norm:",
			"rms_qkv_qknorm_rope_multi.py", "head_dim 32 ≠ emb_dim / n_heads = 64 / 4", "MODEL_REVISION: Optional[str] = None  # the validated checkpoint is not a hub snapshot",
			"CHECKPOINT_SOURCE = (\n    \"llm-tiny-qwen3==0.0.1", "CHECKPOINT_PATH = \"models/Tiny-Qwen3\"\n",
			`return os.path.join(cache, *CHECKPOINT_PATH.split("/"))`,
			"(validated weights: llm-tiny-qwen3==0.0.1",
			"head_dim: int = 32  # n_heads * head_dim = 128, not emb_dim", "wo: np.ndarray  # (128, 64)"},
			[]string{"q_proj.bias", "- QKV bias:", "revision unknown"},
			[]string{"rms_norm", "qk_norm_per_head", "softmax", "attention_reference"}},
	} {
		t.Run(tc.family, func(t *testing.T) {
			spec := loadSpec(t, tc.family)
			files, err := Render(spec)
			if err != nil {
				t.Fatal(err)
			}
			var all strings.Builder
			for _, f := range files {
				all.Write(f.Data)
			}
			for _, s := range tc.present {
				if !strings.Contains(all.String(), s) {
					t.Errorf("rendered files lack %q", s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(all.String(), s) {
					t.Errorf("rendered files contain %q, which does not apply to %s", s, tc.family)
				}
			}
			if got := HelpersKept(spec); !slices.Equal(got, tc.helpersKept) {
				t.Errorf("HelpersKept = %v, want %v", got, tc.helpersKept)
			}
		})
	}
}

func TestRenderFileSet(t *testing.T) {
	files, err := Render(loadSpec(t, "qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
		if f.KeepExisting == strings.HasSuffix(f.Path, ".py") {
			t.Errorf("%s: KeepExisting = %v", f.Path, f.KeepExisting)
		}
	}
	want := []string{"tiny_qwen3_weights.py", "tiny_qwen3_cpu_helpers.py", "TODO.md", "README.md",
		"docs/development_progress/progress.md", "docs/development_progress/LESSONS.md",
		"docs/development_progress/debug_log.md", "docs/development_progress/phase_timing.md", ".gitignore"}
	if !slices.Equal(paths, want) {
		t.Errorf("paths = %v, want %v", paths, want)
	}
}

func TestRenderRejectsInvalidSpec(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Spec)
		want   string
	}{
		{"bad name", func(s *Spec) { s.Name = "3b-model" }, `name "3b-model"`},
		{"no family", func(s *Spec) { s.Family = nil }, "no model family"},
		{"zero layers", func(s *Spec) { s.NLayers = 0 }, "n_layers must be positive, found 0"},
		{"gqa mismatch", func(s *Spec) { s.NKVHeads = 3 }, "n_heads 4 is not divisible by n_kv_heads 3"},
		{"odd head_dim", func(s *Spec) { s.HeadDim = 15 }, "head_dim 15 must be even"},
		{"no eps", func(s *Spec) { s.RMSNormEps = 0 }, "rms_norm_eps must be in (0, 1), found 0"},
		{"yarn", func(s *Spec) { s.RopeScaling = &model.RopeScaling{RopeType: "yarn", Factor: 4} }, `rope scaling type "yarn" is not one of linear, llama3`},
		{"llama3 without freq factors", func(s *Spec) { s.RopeScaling = &model.RopeScaling{RopeType: "llama3", Factor: 8} }, "low_freq_factor < high_freq_factor"},
		{"quote in id", func(s *Spec) { s.ModelID = `evil"id` }, "model_id"},
		{"newline in revision", func(s *Spec) { s.Revision = "a\nb" }, "revision"},
		{"path as local id", func(s *Spec) { s.OnHub = false; s.ModelID = "/home/me/models/x" }, "must be its folder name, not a path"},
		{"local without checkpoint", func(s *Spec) { s.OnHub = false; s.ModelID = "x"; s.Checkpoint = Checkpoint{} }, "needs a checkpoint root"},
		{"absolute checkpoint", func(s *Spec) { s.Checkpoint.Path = "/root/.cache/phase0/models/x" }, "relative"},
		{"unknown root", func(s *Spec) { s.Checkpoint.Root = "home" }, `checkpoint root "home"`},
		{"path without root", func(s *Spec) { s.Checkpoint = Checkpoint{Path: "x"} }, "has no root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := loadSpec(t, "qwen3")
			tc.mutate(&s)
			_, err := Render(s)
			if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Render error = %v, want ErrInvalidSpec containing %q", err, tc.want)
			}
		})
	}
}

// The Phase 2 prerequisites list only what applies, and the section is
// absent when nothing does.
func TestPhase2Prerequisites(t *testing.T) {
	aligned := loadSpec(t, "mistral")
	aligned.EmbDim, aligned.HiddenDim, aligned.NHeads, aligned.NKVHeads, aligned.HeadDim = 1024, 4096, 16, 8, 64
	for _, tc := range []struct {
		name    string
		spec    Spec
		present []string
		absent  []string
	}{
		{"aligned llama-like", aligned, nil, []string{"## Phase 2 prerequisites"}},
		{"unaligned hidden", func() Spec { s := aligned; s.HiddenDim = 4864; return s }(),
			[]string{"- Not multiples of 1024: hidden_dim 4864 (next multiple 5120)."}, []string{"emb_dim 1024 (", "- QK-norm", "- QKV bias", "≠"}},
		{"qwen3", loadSpec(t, "qwen3"), []string{"- QK-norm:", "- head_dim 32 ≠", "emb_dim 64 (next multiple 1024)"}, []string{"- QKV bias"}},
		{"qwen2", loadSpec(t, "qwen2"), []string{"- QKV bias:", "build_rms_qkv_bias_rope_gemv_module"}, []string{"- QK-norm", "≠"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := Render(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			todo := string(files[2].Data)
			for _, s := range tc.present {
				if !strings.Contains(todo, s) {
					t.Errorf("TODO.md lacks %q:\n%s", s, todo)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(todo, s) {
					t.Errorf("TODO.md contains %q:\n%s", s, todo)
				}
			}
		})
	}
}

func TestLicenseLines(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
		err        string
	}{
		{"empty", "", nil, ""},
		{"blank lines only", "\n \n", nil, ""},
		{"one line", "SPDX-License-Identifier: MIT", []string{"SPDX-License-Identifier: MIT"}, ""},
		{"pasted from a Python file", "# Copyright (C) 2026, Advanced Micro Devices, Inc.\r\n# SPDX-License-Identifier: MIT\r\n",
			[]string{"Copyright (C) 2026, Advanced Micro Devices, Inc.", "SPDX-License-Identifier: MIT"}, ""},
		{"inner blank line kept, outer ones dropped", "\n\nA\n#\nB  \t\n\n", []string{"A", "", "B"}, ""},
		{"no space after #", "#A", []string{"A"}, ""},
		{"quotes and backslashes are fine in a comment", `He said "C:\x"`, []string{`He said "C:\x"`}, ""},
		{"control character", "A\x07B", nil, "license header line 1"},
		{"tab inside", "A\tB", nil, "cannot be in a comment line"},
		{"too many lines", strings.Repeat("x\n", MaxLicenseLines+1), nil, "at most 30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LicenseLines(tc.text)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("LicenseLines(%q) error = %v, want %q", tc.text, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("LicenseLines(%q) = %q, %v; want %q", tc.text, got, err, tc.want)
			}
		})
	}
}

// The license header opens every generated Python file and nothing else;
// without one the files open with their docstring, as before.
func TestRenderLicenseHeader(t *testing.T) {
	spec := loadSpec(t, "qwen2")
	plain, err := Render(spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.LicenseHeader = []string{"Copyright (C) 2026, Advanced Micro Devices, Inc.", "", "SPDX-License-Identifier: MIT"}
	headed, err := Render(spec)
	if err != nil {
		t.Fatal(err)
	}
	const header = "# Copyright (C) 2026, Advanced Micro Devices, Inc.\n#\n# SPDX-License-Identifier: MIT\n\n"
	for i, f := range headed {
		before := string(plain[i].Data)
		if !strings.HasSuffix(f.Path, ".py") {
			if string(f.Data) != before {
				t.Errorf("%s changed with a license header", f.Path)
			}
			continue
		}
		if !strings.HasPrefix(before, `"""`) {
			t.Errorf("%s without a header starts %q", f.Path, before[:20])
		}
		if string(f.Data) != header+before {
			t.Errorf("%s with a header starts %q, want the header then the file", f.Path, string(f.Data)[:120])
		}
	}
	spec.LicenseHeader = []string{"bad\x00line"}
	if _, err := Render(spec); !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "license header line 1") {
		t.Errorf("Render with a NUL in the header: %v", err)
	}
}
