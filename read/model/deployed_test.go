package model

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func analyzeDeployedFile(t *testing.T, name string, edit func(string) string) *Analysis {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "configs", name))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		data = []byte(edit(string(data)))
	}
	raw, err := ParseRaw(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return AnalyzeDeployed(raw)
}

// A new bring-up of either deployed family stays REJECTED, and the message
// names the tree folder that validates an existing deployment.
func TestDeployedFamiliesRejectedForBringUp(t *testing.T) {
	for file, want := range map[string]struct {
		folder string
		codes  []string
	}{
		"gemma-3-4b-it.json":       {"gemma3_4b_q4nx", []string{"unsupported_architecture"}},
		"phi-4-mini-instruct.json": {"phi4_mini_q4nx", []string{"partial_rotary", "unsupported_architecture"}},
	} {
		a := analyzeFile(t, file)
		if got := codes(a); !reflect.DeepEqual(got, want.codes) {
			t.Errorf("%s: codes %v, want %v", file, got, want.codes)
		}
		for _, r := range a.Rejections {
			if r.Code == CodeUnsupportedArchitecture && !strings.Contains(r.Message, "validated through the tree's "+want.folder+" folder") {
				t.Errorf("%s: %q does not name %s", file, r.Message, want.folder)
			}
		}
	}
}

func TestAnalyzeDeployedGemma3(t *testing.T) {
	for _, tc := range []struct {
		file string
		want Config
		dep  Deployed
	}{
		{"gemma-3-4b-it.json", Config{NLayers: 34, EmbDim: 2560, NHeads: 8, NKVHeads: 4, HeadDim: 256, HiddenDim: 10240, VocabSize: 262208,
			RopeBase: 1e6, TieWordEmbeddings: true, RMSNormEps: 1e-6, QKNorm: true, RopeScaling: &RopeScaling{RopeType: "linear", Factor: 8},
			HiddenAct: "gelu_pytorch_tanh", DType: "bfloat16"},
			Deployed{SlidingWindow: 1024, SlidingPattern: 6, LocalRopeBase: 1e4, QueryPreAttnScalar: 256, EmbedScale: math.Sqrt(2560)}},
		{"gemma3-tiny-tf5.json", Config{NLayers: 7, EmbDim: 64, NHeads: 2, NKVHeads: 1, HeadDim: 32, HiddenDim: 128, VocabSize: 512,
			RopeBase: 1e6, TieWordEmbeddings: true, RMSNormEps: 1e-6, QKNorm: true, RopeScaling: &RopeScaling{RopeType: "linear", Factor: 8},
			HiddenAct: "gelu_pytorch_tanh"},
			Deployed{SlidingWindow: 16, SlidingPattern: 6, LocalRopeBase: 1e4, QueryPreAttnScalar: 256, EmbedScale: 8}},
	} {
		a := analyzeDeployedFile(t, tc.file, nil)
		if a.Rejected() {
			t.Fatalf("%s: rejected: %v", tc.file, a.Rejections)
		}
		if a.Family.Name() != "gemma3" || !reflect.DeepEqual(*a.Config, tc.want) {
			t.Errorf("%s: %s %+v, want gemma3 %+v", tc.file, a.Family.Name(), *a.Config, tc.want)
		}
		d := a.Deployed
		if d.Folder != "gemma3_4b_q4nx" || !d.NormPlusOne || d.SlidingWindow != tc.dep.SlidingWindow || d.SlidingPattern != tc.dep.SlidingPattern ||
			d.LocalRopeBase != tc.dep.LocalRopeBase || d.QueryPreAttnScalar != tc.dep.QueryPreAttnScalar || math.Abs(d.EmbedScale-tc.dep.EmbedScale) > 1e-12 {
			t.Errorf("%s: deployed %+v, want %+v", tc.file, *d, tc.dep)
		}
		var global []int
		for k := range a.Config.NLayers {
			if d.GlobalLayer(k) {
				global = append(global, k)
			}
		}
		if want := map[int][]int{34: {5, 11, 17, 23, 29}, 7: {5}}[a.Config.NLayers]; !reflect.DeepEqual(global, want) {
			t.Errorf("%s: global layers %v, want %v", tc.file, global, want)
		}
	}
}

func TestAnalyzeDeployedPhi3(t *testing.T) {
	a := analyzeDeployedFile(t, "phi-4-mini-instruct.json", nil)
	if a.Rejected() {
		t.Fatalf("rejected: %v", a.Rejections)
	}
	want := Config{NLayers: 32, EmbDim: 3072, NHeads: 24, NKVHeads: 8, HeadDim: 128, HiddenDim: 8192, VocabSize: 200064,
		RopeBase: 1e4, TieWordEmbeddings: true, RMSNormEps: 1e-5, HiddenAct: "silu", DType: "bfloat16"}
	if a.Family.Name() != "phi3" || !reflect.DeepEqual(*a.Config, want) {
		t.Errorf("%s %+v, want phi3 %+v", a.Family.Name(), *a.Config, want)
	}
	d := a.Deployed
	if d.Folder != "phi4_mini_q4nx" || !d.FusedQKV || !d.FusedGateUp || d.RopeDim != 96 || d.OriginalMaxPos != 4096 || d.MaxPos != 131072 ||
		len(d.ShortFactor) != 48 || len(d.LongFactor) != 48 || d.LongFactor[47] != 47.77 || math.Abs(d.AttentionScaling-1.1902380714238083) > 1e-12 {
		t.Errorf("deployed %+v", *d)
	}
	tiny := analyzeDeployedFile(t, "phi3-tiny-tf5.json", nil)
	if tiny.Rejected() || tiny.Deployed.RopeDim != 12 || tiny.Deployed.OriginalMaxPos != 64 || len(tiny.Deployed.LongFactor) != 6 || tiny.Config.RopeBase != 1e4 || !tiny.Config.TieWordEmbeddings {
		t.Errorf("tiny tf5: %v %+v %+v", tiny.Rejections, tiny.Config, tiny.Deployed)
	}
}

// Bad deployed configs are invalid_config naming the key.
func TestAnalyzeDeployedInvalid(t *testing.T) {
	for _, tc := range []struct {
		file, old, new, want string
	}{
		{"phi-4-mini-instruct.json", `"short_factor": [
      1.0,`, `"short_factor": [`, "rope_scaling.short_factor has 47 entries, expected rotated dims / 2 = 48"},
		{"phi-4-mini-instruct.json", `"partial_rotary_factor": 0.75`, `"partial_rotary_factor": 0.71`, "gives 91 rotated dims"},
		{"gemma-3-4b-it.json", `"text_config": {`, `"text_configs": {`, "required key text_config is missing"},
		{"gemma3-tiny-tf5.json", `"sliding_attention",
      "full_attention"`, `"full_attention",
      "full_attention"`, `layer_types[4] is "full_attention", but sliding_window_pattern 6 makes layer 4 local`},
	} {
		a := analyzeDeployedFile(t, tc.file, func(s string) string {
			if !strings.Contains(s, tc.old) {
				t.Fatalf("%s has no %q", tc.file, tc.old)
			}
			return strings.Replace(s, tc.old, tc.new, 1)
		})
		if len(a.Rejections) != 1 || a.Rejections[0].Code != CodeInvalidConfig || !strings.Contains(a.Rejections[0].Message, tc.want) {
			t.Errorf("%s: %v, want invalid_config %q", tc.file, a.Rejections, tc.want)
		}
	}
}

// A supported family reads as Analyze reads it.
func TestAnalyzeDeployedSupportedIsAnalyze(t *testing.T) {
	a := analyzeDeployedFile(t, "qwen3-0.6b-tf5.json", nil)
	b := analyzeFile(t, "qwen3-0.6b-tf5.json")
	if a.Deployed != nil || !reflect.DeepEqual(a.Config, b.Config) {
		t.Errorf("AnalyzeDeployed %+v != Analyze %+v", a.Config, b.Config)
	}
}
