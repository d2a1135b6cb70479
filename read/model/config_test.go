package model

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

func analyzeFile(t *testing.T, name string) *Analysis {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "configs", name))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := ParseRaw(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return Analyze(raw)
}

func codes(a *Analysis) []string {
	var out []string
	for _, r := range a.Rejections {
		out = append(out, r.Code)
	}
	sort.Strings(out)
	return out
}

func TestRealConfigsAccepted(t *testing.T) {
	llama3 := &RopeScaling{RopeType: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	qwen3 := Config{NLayers: 28, EmbDim: 1024, NHeads: 16, NKVHeads: 8, HeadDim: 128, HiddenDim: 3072, VocabSize: 151936,
		RopeBase: 1e6, TieWordEmbeddings: true, RMSNormEps: 1e-6, QKNorm: true, HiddenAct: "silu", DType: "bfloat16"}
	tests := []struct {
		file   string
		family string
		want   Config
	}{
		{"llama-3.2-1b.json", "llama", Config{NLayers: 16, EmbDim: 2048, NHeads: 32, NKVHeads: 8, HeadDim: 64, HiddenDim: 8192,
			VocabSize: 128256, RopeBase: 500000, TieWordEmbeddings: true, RMSNormEps: 1e-5, RopeScaling: llama3, HiddenAct: "silu", DType: "bfloat16"}},
		{"llama-3.1-8b-tf5.json", "llama", Config{NLayers: 32, EmbDim: 4096, NHeads: 32, NKVHeads: 8, HeadDim: 128, HiddenDim: 14336,
			VocabSize: 128256, RopeBase: 500000, RMSNormEps: 1e-5, HiddenAct: "silu", DType: "bfloat16",
			RopeScaling: &RopeScaling{RopeType: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}}},
		{"qwen2.5-0.5b.json", "qwen2", Config{NLayers: 24, EmbDim: 896, NHeads: 14, NKVHeads: 2, HeadDim: 64, HiddenDim: 4864,
			VocabSize: 151936, RopeBase: 1e6, TieWordEmbeddings: true, RMSNormEps: 1e-6, QKVBias: true, HiddenAct: "silu", DType: "bfloat16"}},
		{"qwen3-0.6b.json", "qwen3", qwen3},
		{"qwen3-0.6b-tf5.json", "qwen3", qwen3},
		{"mistral-7b-v0.3.json", "mistral", Config{NLayers: 32, EmbDim: 4096, NHeads: 32, NKVHeads: 8, HeadDim: 128, HiddenDim: 14336,
			VocabSize: 32768, RopeBase: 1e6, RMSNormEps: 1e-5, HiddenAct: "silu", DType: "bfloat16"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			a := analyzeFile(t, tt.file)
			if a.Rejected() {
				t.Fatalf("rejected: %+v", a.Rejections)
			}
			if a.Family.Name() != tt.family {
				t.Errorf("family %s, want %s", a.Family.Name(), tt.family)
			}
			if !reflect.DeepEqual(*a.Config, tt.want) {
				t.Errorf("config\n got %+v\nwant %+v", *a.Config, tt.want)
			}
		})
	}
}

func TestRealConfigsRejected(t *testing.T) {
	tests := []struct {
		file  string
		codes []string
		text  string
	}{
		{"mistral-7b-v0.1.json", []string{CodeSlidingWindow}, "sliding_window is set"},
		{"mixtral-8x7b.json", []string{CodeMoE, CodeUnsupportedArchitecture}, "num_local_experts is 8"},
		{"qwen1.5-moe-a2.7b.json", []string{CodeMoE, CodeUnsupportedArchitecture}, "num_experts is 60"},
		{"deepseek-v2-lite.json", []string{CodeCustomCode, CodeMLA, CodeMoE, CodeUnsupportedArchitecture}, "kv_lora_rank is 512"},
		{"t5-small.json", []string{CodeEncoderDecoder, CodeUnsupportedArchitecture}, "T5ForConditionalGeneration is not supported"},
		{"gemma-2-2b.json", []string{CodeUnsupportedActivation, CodeUnsupportedArchitecture}, "gelu_pytorch_tanh"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			a := analyzeFile(t, tt.file)
			if got := codes(a); !reflect.DeepEqual(got, tt.codes) {
				t.Fatalf("codes %v, want %v (%+v)", got, tt.codes, a.Rejections)
			}
			var all []string
			for _, r := range a.Rejections {
				all = append(all, r.Message)
			}
			msg := strings.Join(all, "\n")
			if !strings.Contains(msg, tt.text) {
				t.Errorf("messages %q lack %q", msg, tt.text)
			}
			if a.Family == nil && !strings.Contains(msg, "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM") {
				t.Errorf("unsupported-architecture message must list the supported ones: %q", msg)
			}
			if a.Config != nil {
				t.Errorf("a rejected model must not get a config")
			}
		})
	}
}

const tinyLlama = `"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_attention_heads": 4,
 "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 512`

func analyzeJSON(t *testing.T, body string) *Analysis {
	t.Helper()
	raw, err := ParseRaw([]byte("{" + body + "}"))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return Analyze(raw)
}

func TestDefaultsLedger(t *testing.T) {
	a := analyzeJSON(t, tinyLlama)
	if a.Rejected() {
		t.Fatal(a.Rejections)
	}
	c := a.Config
	if c.NKVHeads != 4 || c.HeadDim != 16 || c.RopeBase != 10000 || c.RMSNormEps != 1e-6 || c.TieWordEmbeddings || c.HiddenAct != "silu" {
		t.Errorf("defaults wrong: %+v", c)
	}
	var fields []string
	for _, d := range a.Defaulted {
		fields = append(fields, d.Field)
	}
	want := []string{"n_kv_heads", "head_dim", "rope_base", "tie_word_embeddings", "rms_norm_eps", "hidden_act", "qkv_bias"}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("ledger %v, want %v", fields, want)
	}
}

func TestExplicitFalseAndZeroAreNotDefaults(t *testing.T) {
	a := analyzeJSON(t, tinyLlama+`, "tie_word_embeddings": false, "attention_bias": false, "num_key_value_heads": 2, "head_dim": 16, "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "hidden_act": "silu"`)
	if len(a.Defaulted) != 0 {
		t.Errorf("explicit values recorded as defaults: %+v", a.Defaulted)
	}
	b := analyzeJSON(t, tinyLlama+`, "num_key_value_heads": 0`)
	if !b.Rejected() || b.Rejections[0].Code != CodeInvalidConfig || !strings.Contains(b.Rejections[0].Message, "n_kv_heads must be positive, found 0") {
		t.Errorf("explicit zero must be invalid, not defaulted: %+v", b.Rejections)
	}
}

func TestQwen3HeadDimClassDefault(t *testing.T) {
	a := analyzeJSON(t, `"architectures": ["Qwen3ForCausalLM"], "hidden_size": 64, "num_attention_heads": 4,
	  "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 512`)
	if a.Rejected() {
		t.Fatal(a.Rejections)
	}
	if a.Config.HeadDim != 128 || !a.Config.QKNorm || a.Config.QKVBias {
		t.Errorf("qwen3 defaults wrong: %+v", a.Config)
	}
}

func TestRules(t *testing.T) {
	tests := []struct {
		name, extra, code, text string
	}{
		{"mlp bias", `, "mlp_bias": true`, CodeMLPBias, "mlp_bias is true"},
		{"activation", `, "hidden_act": "gelu"`, CodeUnsupportedActivation, `"gelu"`},
		{"partial rotary", `, "partial_rotary_factor": 0.5`, CodePartialRotary, "0.5"},
		{"yarn", `, "rope_scaling": {"type": "yarn", "factor": 4}`, CodeUnsupportedRopeScaling, `"yarn"`},
		{"dynamic tf5", `, "rope_parameters": {"rope_type": "dynamic", "factor": 2, "rope_theta": 10000}`, CodeUnsupportedRopeScaling, `"dynamic"`},
		{"auto_map", `, "auto_map": {"AutoModelForCausalLM": "x.Y"}`, CodeCustomCode, "trust_remote_code"},
		{"layer types", `, "layer_types": ["full_attention", "sliding_attention"]`, CodeSlidingWindow, "sliding_attention"},
		{"llama sliding", `, "sliding_window": 512`, CodeSlidingWindow, "Llama"},
		{"heads not divisible", `, "num_key_value_heads": 3`, CodeInvalidConfig, "n_heads 4 is not divisible by n_kv_heads 3"},
		{"odd head dim", `, "head_dim": 15`, CodeInvalidConfig, "head_dim 15 must be even"},
		{"theta disagree", `, "rope_theta": 10000, "rope_parameters": {"rope_type": "default", "rope_theta": 500000}`, CodeInvalidConfig, "disagrees"},
		{"llama3 incomplete", `, "rope_scaling": {"rope_type": "llama3", "factor": 8}`, CodeInvalidConfig, "needs low_freq_factor"},
		{"string dim", `, "num_hidden_layers": "2"`, CodeInvalidConfig, "num_hidden_layers must be an integer"},
		{"moe zero experts is dense", `, "num_experts": 0`, "", ""},
		{"llama attention bias", `, "attention_bias": true`, CodeOutputBias, "LlamaForCausalLM then adds a bias to o_proj"},
		{"llama attention bias false", `, "attention_bias": false`, "", ""},
		{"awq packaging", `, "quantization_config": {"bits": 4, "quant_method": "awq", "version": "gemm"}`, CodeQuantized, `quant_method "awq"`},
		{"policy config", `, "type": "smolvla"`, CodeUnsupportedArchitecture, "config.json names no architectures"},
		{"quantized without method", `, "quantization_config": {"bits": 4}`, CodeQuantized, "no quant_method"},
		{"null quantization_config", `, "quantization_config": null`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tinyLlama
			if tt.name == "string dim" {
				body = strings.Replace(body, `"num_hidden_layers": 2,`, "", 1)
			}
			if tt.name == "policy config" {
				body = strings.Replace(body, `"architectures": ["LlamaForCausalLM"], `, "", 1)
			}
			a := analyzeJSON(t, body+tt.extra)
			if tt.code == "" {
				if a.Rejected() {
					t.Fatalf("unexpected rejection %+v", a.Rejections)
				}
				return
			}
			found := false
			for _, r := range a.Rejections {
				if r.Code == tt.code && strings.Contains(r.Message, tt.text) {
					found = true
				}
			}
			if !found {
				t.Errorf("want %s containing %q, got %+v", tt.code, tt.text, a.Rejections)
			}
		})
	}
}

// malformedInts are the values of an integer field that are not a count
// phase0 can take, each with what the rejection must say: an integer out of
// range says so and names the limit (issue 49 item 7: 2147483648 said
// "must be an integer"), whether it fits int64 or not.
var malformedInts = []struct{ value, text string }{
	{"2147483648", "is 2147483648, out of range: above the sane limit %d"},
	{"9223372036854775808", "is 9223372036854775808, out of range: above the sane limit %d"},
	{"1" + strings.Repeat("0", 400), "out of range: above the sane limit %d"},
	{"-2147483649", "is -2147483649, out of range: it must be positive, at most %d"},
	{"100000000", "above the sane limit %d"},
	{"2.5", "must be an integer, found 2.5"},
	{"1e3", "must be an integer, found 1e3"},
	{`"7"`, "must be an integer"},
	{"true", "must be an integer"},
	{"[1]", "must be an integer"},
	{"-1", "must be positive"},
}

// Every integer field a Config takes is checked the same way.
func TestIntegerFieldsOutOfRange(t *testing.T) {
	for _, key := range []string{"num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size"} {
		limit, sane := IntLimit(key)
		if !sane {
			t.Fatalf("%s has no sane limit", key)
		}
		for _, tc := range malformedInts {
			t.Run(key+"="+tc.value[:min(len(tc.value), 12)], func(t *testing.T) {
				body := tinyLlama
				if key != "head_dim" {
					body += `, "head_dim": 16` // not derived from the field under test
				}
				if strings.Contains(body, `"`+key+`": `) {
					body = regexp.MustCompile(`"`+key+`": [0-9]+`).ReplaceAllString(body, `"`+key+`": `+tc.value)
				} else {
					body += `, "` + key + `": ` + tc.value
				}
				a := analyzeJSON(t, body)
				want := tc.text
				if strings.Contains(want, "%d") {
					want = fmt.Sprintf(want, limit)
				}
				if len(a.Rejections) != 1 || a.Rejections[0].Code != CodeInvalidConfig || !strings.Contains(a.Rejections[0].Message, want) {
					t.Fatalf("rejections %+v, want one %s saying %q", a.Rejections, CodeInvalidConfig, want)
				}
				if msg := a.Rejections[0].Message; len(msg) > 200 || strings.Contains(msg, "must be an integer") != strings.Contains(tc.text, "must be an integer") {
					t.Errorf("message %q (%d bytes)", msg, len(msg))
				}
			})
		}
	}
}

// An integer beyond the 32-bit range still counts where only its sign
// matters: 2147483648 experts are a mixture of experts.
func TestHugeExpertCountIsMoE(t *testing.T) {
	a := analyzeJSON(t, tinyLlama+`, "num_local_experts": 2147483648`)
	if len(a.Rejections) == 0 || a.Rejections[0].Code != CodeMoE || !strings.Contains(a.Rejections[0].Message, "num_local_experts is 2147483648") {
		t.Fatalf("rejections %+v, want moe naming 2147483648", a.Rejections)
	}
}

func TestLinearScalingWithOldTypeKey(t *testing.T) {
	a := analyzeJSON(t, tinyLlama+`, "rope_scaling": {"type": "linear", "factor": 2.0}`)
	if a.Rejected() {
		t.Fatal(a.Rejections)
	}
	if got := a.Config.RopeScaling; got == nil || *got != (RopeScaling{RopeType: "linear", Factor: 2}) {
		t.Errorf("rope scaling %+v", got)
	}
}

func TestSlidingWindowPerFamily(t *testing.T) {
	qwen := `"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 512`
	mistral := strings.Replace(qwen, "Qwen2ForCausalLM", "MistralForCausalLM", 1)
	tests := []struct {
		name, body string
		reject     bool
	}{
		{"qwen window without switch", qwen + `, "sliding_window": 4096`, true},
		{"qwen window switched on", qwen + `, "sliding_window": 4096, "use_sliding_window": true`, true},
		{"qwen window switched off", qwen + `, "sliding_window": 4096, "use_sliding_window": false`, false},
		{"qwen no window", qwen, false},
		{"mistral absent means class default 4096", mistral, true},
		{"mistral null", mistral + `, "sliding_window": null`, false},
		{"mistral switch is ignored by its code", mistral + `, "sliding_window": 4096, "use_sliding_window": false`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzeJSON(t, tt.body)
			if a.Rejected() != tt.reject {
				t.Errorf("rejected=%v, want %v: %+v", a.Rejected(), tt.reject, a.Rejections)
			}
		})
	}
}

func TestParseRawErrors(t *testing.T) {
	tests := []struct{ name, in, text string }{
		{"not json", `{"a": `, "not valid JSON"},
		{"array", `[1, 2]`, "must hold a JSON object"},
		{"duplicate", `{"vocab_size": 1, "vocab_size": 2}`, `key "vocab_size" appears twice`},
		{"trailing", `{"a": 1} {"b": 2}`, "data after the top-level object"},
		{"empty", ``, "not valid JSON"},
		{"nested duplicate", `{"rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "rope_theta": 2e4}}`, `key "rope_parameters.rope_theta" appears twice`},
		{"deep duplicate", `{"text_config": {"a": [1, {"b": 1}], "rope_scaling": {"factor": 8, "x": {}, "factor": 4}}}`, `key "text_config.rope_scaling.factor" appears twice`},
		{"duplicate in array element", `{"layers": [{"a": 1}, {"a": 1, "a": 2}]}`, `key "layers[].a" appears twice`},
		{"invalid utf-8", "{\"model_type\": \"llama\", \"note\": \"\xff\xfe\"}", "invalid byte 0xff at offset 33"},
		{"truncated utf-8", "{\"note\": \"caf\xc3\"}", "not UTF-8: invalid byte 0xc3 at offset 13"},
		{"too deep", strings.Repeat(`{"a": `, 70) + "1" + strings.Repeat("}", 70), "nests deeper than 64 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRaw([]byte(tt.in))
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("err %v, want ErrConfig containing %q", err, tt.text)
			}
		})
	}
}

// TestParseRawAcceptsNesting: the strict pass does not refuse what real
// configs hold: the same key in sibling objects, arrays of objects, empty ones.
func TestParseRawAcceptsNesting(t *testing.T) {
	in := `{"text_config": {"rope_theta": 1}, "vision_config": {"rope_theta": 2}, "l": [{"a": 1}, {"a": 2}], "e": {}, "z": [], "u": "caf\u00e9 ünï"}`
	if _, err := ParseRaw([]byte(in)); err != nil {
		t.Fatal(err)
	}
}

func TestReadRawFromFS(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadRaw(os.DirFS(dir)); !errors.Is(err, ErrConfig) {
		t.Errorf("missing config.json: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{"+tinyLlama+"}"), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := ReadRaw(os.DirFS(dir))
	if err != nil || !raw.Has("vocab_size") {
		t.Fatalf("read: %v", err)
	}
}

func FuzzAnalyze(f *testing.F) {
	entries, _ := os.ReadDir(filepath.Join("testdata", "configs"))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("testdata", "configs", e.Name()))
		if err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"architectures": ["LlamaForCausalLM"], "rope_scaling": {"type": 1}}`))
	for _, tc := range malformedInts {
		f.Add([]byte("{" + tinyLlama + `, "head_dim": ` + tc.value + "}"))
		f.Add([]byte("{" + strings.Replace(tinyLlama, `"hidden_size": 64`, `"hidden_size": `+tc.value, 1) + "}"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := ParseRaw(data)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("parse error not ErrConfig: %v", err)
			}
			return
		}
		a := Analyze(raw)
		if a.Rejected() == (a.Config != nil) {
			t.Fatalf("rejected=%v but config=%v", a.Rejected(), a.Config)
		}
		if a.Config != nil {
			if err := a.Config.Validate(); err != nil {
				t.Fatalf("accepted config fails validation: %v", err)
			}
		}
	})
}

func TestReadRawRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "config.json"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadRaw(os.DirFS(dir)); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("error %v, want ErrConfig naming a non-regular file", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadRaw hung on a named pipe")
	}
	dir = t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "config.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRaw(os.DirFS(dir)); !errors.Is(err, ErrConfig) {
		t.Errorf("a directory named config.json: %v", err)
	}
}
