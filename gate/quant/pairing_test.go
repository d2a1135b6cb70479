package quant

import (
	"strings"
	"testing"

	"phase0/gate/config"
	"phase0/gate/verdict"
	"phase0/read/llmstree"
	"phase0/read/model"
)

func TestBaseModel(t *testing.T) {
	for _, c := range []struct{ card, want string }{
		{"---\nlicense: llama3.2\nbase_model: meta-llama/Llama-3.2-1B-Instruct\ntags:\n- npu\n---\n# x\n", "meta-llama/Llama-3.2-1B-Instruct"},
		{"---\nbase_model:\n- 'Qwen/Qwen3-8B'\n---\n", "Qwen/Qwen3-8B"},
		{"# no front matter\nbase_model: x/y\n", ""},
		{"---\nlicense: mit\n---\nbase_model: x/y\n", ""},
		// Valid YAML the hub's cards use: a comment after the value, a flow
		// list, a block list under a comment, CRLF line ends, a quoted id.
		{"---\nbase_model: meta-llama/Llama-3.2-1B-Instruct  # the bf16 source\n---\n", "meta-llama/Llama-3.2-1B-Instruct"},
		{"---\nbase_model: [meta-llama/Llama-3.2-1B-Instruct]\nbase_model_relation: quantized\n---\n", "meta-llama/Llama-3.2-1B-Instruct"},
		{"---\nbase_model: # the source\n  - \"Qwen/Qwen3-8B\"  # bf16\n  - other/x\n---\n", "Qwen/Qwen3-8B"},
		{"---\r\nlicense: mit\r\nbase_model: 'a/b'\r\n---\r\n", "a/b"},
		{"---\nbase_model: [a/b\n---\n", ""},   // not YAML: no base model
		{"---\nbase_model: a/b\n", ""},         // never closed: not front matter
		{"---\nbase_model: {x: y}\n---\n", ""}, // not an id
	} {
		if got := BaseModel([]byte(c.card)); got != c.want {
			t.Errorf("BaseModel(%q) = %q, want %q", c.card, got, c.want)
		}
	}
}

func TestPairing(t *testing.T) {
	choices := []llmstree.Choice{{Key: "base", Reference: "NousResearch/Meta-Llama-3.1-8B"}, {Key: "instruct", Reference: "NousResearch/Meta-Llama-3.1-8B-Instruct"}}
	use := func(key, ref string) llmstree.Use {
		return llmstree.Use{Folder: "llama31_8b_q4nx", Key: key, Reference: ref, Bundle: "FastFlowLM/Llama-3.1-8B-NPU2", Choices: choices}
	}
	// The card names Meta's repo; the keys name NousResearch's licence-free mirror.
	if p := CheckPairing(use("instruct", choices[1].Reference), "meta-llama/Llama-3.1-8B-Instruct", nil); p.Status != verdict.Pass {
		t.Errorf("instruct key: %s %q", p.Status, p.Findings)
	}
	p := CheckPairing(use("base", choices[0].Reference), "meta-llama/Llama-3.1-8B-Instruct", nil)
	if p.Status != verdict.Fail || p.RightKey != "instruct" || !strings.Contains(p.Summary, `key "base" pairs FastFlowLM/Llama-3.1-8B-NPU2 with NousResearch/Meta-Llama-3.1-8B`) ||
		!strings.Contains(p.Summary, "meta-llama/Llama-3.1-8B-Instruct") || !strings.Contains(p.Summary, `key "instruct"`) {
		t.Errorf("base key: %s %q", p.Status, p.Summary)
	}
	if p := CheckPairing(llmstree.Use{Folder: "qwen25_3b_q4", Key: "base", Reference: "Qwen/Qwen2.5-3B"}, "", nil); p.Status != verdict.Pass {
		t.Errorf("quantize-on-load folder: %s", p.Status)
	}
	if p := CheckPairing(use("base", choices[0].Reference), "", nil); p.Status != verdict.Warn {
		t.Errorf("no card: %s, want WARN", p.Status)
	}
	// No card, but the numbers tell: the weights are the Instruct checkpoint's.
	nums := []Closeness{{ID: choices[0].Reference, Cosine: 0.01, Tensors: 7}, {ID: choices[1].Reference, Cosine: 0.997, Tensors: 7}}
	if p := CheckPairing(use("base", choices[0].Reference), "", nums); p.Status != verdict.Fail || p.RightKey != "instruct" || !strings.Contains(p.Summary, "closest to NousResearch/Meta-Llama-3.1-8B-Instruct") {
		t.Errorf("numbers against the key: %s %q", p.Status, p.Summary)
	}
	// Within the margin the numbers say nothing.
	if p := CheckPairing(use("base", choices[0].Reference), "", []Closeness{{ID: choices[0].Reference, Cosine: 0.9970, Tensors: 7}, {ID: choices[1].Reference, Cosine: 0.9975, Tensors: 7}}); p.Status != verdict.Warn {
		t.Errorf("a near tie: %s %q, want the card's WARN", p.Status, p.Summary)
	}
}

func TestConstants(t *testing.T) {
	src := []byte("D = 4096  # hidden_size\nDH = 128\nINTER = 12288\nNUM_LAYERS = 36\nVOCAB = 151936\nRMS_EPS = 1e-6\nROPE_THETA = 1000000.0\nN_LAYERS = _w.NUM_LAYERS\nOTHER = 3\n")
	consts := ModuleConstants(src)
	if len(consts) != 7 {
		t.Fatalf("constants %v, want the 7 literal ones", consts)
	}
	ref := &model.Config{NLayers: 36, EmbDim: 4096, NHeads: 32, NKVHeads: 8, HeadDim: 128, HiddenDim: 12288, VocabSize: 151936, RopeBase: 1e6, RMSNormEps: 1e-6}
	if c := checkConstants("m.py", consts, ref, nil); c.Status != verdict.Pass || len(c.Checked) != 7 {
		t.Errorf("matching constants: %s %q", c.Status, c.Findings)
	}
	bad := *ref
	bad.HiddenDim, bad.RMSNormEps = 14336, 1e-5
	c := checkConstants("m.py", consts, ref, &bad)
	want := []string{"m.py: INTER = 12288, but the bundle's config.json gives hidden_dim = 14336", "m.py: RMS_EPS = 1e-06, but the bundle's config.json gives rms_norm_eps = 1e-05"}
	if c.Status != verdict.Fail || strings.Join(c.Findings, "\n") != strings.Join(want, "\n") {
		t.Errorf("disagreeing bundle config: %s\n%s", c.Status, strings.Join(c.Findings, "\n"))
	}
}

// TestConstantsNothingToCheckWarns: a module that hard-codes no constant and
// has no config of its own and no RoPE table (its constants come from
// elsewhere) is a WARN saying so, not a vacuous PASS; a judged RoPE table
// of the module its config comes from is named in the summary.
func TestConstantsNothingToCheckWarns(t *testing.T) {
	ref := &model.Config{NLayers: 28, EmbDim: 3072}
	c := checkConstants("llama32_3b_q4nx_weights.py", map[string]float64{}, ref, nil)
	c.Conclude()
	if c.Status != verdict.Warn || !strings.Contains(c.Summary, "nothing of gate 3 could be checked") {
		t.Errorf("nothing checked: %s %q, want WARN saying so", c.Status, c.Summary)
	}
	c = checkConstants("llama32_3b_q4nx_weights.py", map[string]float64{"LlamaConfig().n_layers": 28}, ref, nil)
	c.Behaviour, c.RopeFrom = &config.Consistency{}, "/t/llms/llama32_3b/llama32_3b_weights.py"
	c.Conclude()
	if c.Status != verdict.Pass || !strings.Contains(c.Summary, "RoPE table (llama32_3b_weights.py's, which the folder uses) judged by behaviour") {
		t.Errorf("a config class and a borrowed RoPE table: %s %q", c.Status, c.Summary)
	}
}

// TestBundleConfigJudged: a bundle whose own config.json says rope_theta
// 10000 where the reference (and the module held to it) says 500000 FAILs
// quantized gate 3 naming the bundle's value, though the module hard-codes
// no θ; one that agrees passes; no bundle config is nothing to check.
func TestBundleConfigJudged(t *testing.T) {
	ref := &model.Config{NLayers: 16, EmbDim: 2048, NHeads: 32, NKVHeads: 8, HeadDim: 64, HiddenDim: 8192, VocabSize: 128256, RopeBase: 500000, RMSNormEps: 1e-5,
		RopeScaling: &model.RopeScaling{RopeType: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}}
	consts := map[string]float64{"D": 2048, "INTER": 8192}
	for _, c := range []struct {
		name   string
		bundle func(*model.Config)
		want   string
	}{
		{"agrees", func(*model.Config) {}, ""},
		{"rope_theta 10000", func(b *model.Config) { b.RopeBase = 10000 }, "the bundle's config.json gives rope_base = 10000, the reference's 500000: m.py is held to the reference's, so it cannot match the bundle's"},
		{"no llama3 scaling", func(b *model.Config) { b.RopeScaling = nil }, "the bundle's config.json gives rope_scaling none, the reference's {RopeType:llama3"},
	} {
		b := *ref
		c.bundle(&b)
		g := checkConstants("m.py", consts, ref, &b)
		g.CheckBundleConfig(ref, &b)
		f := strings.Join(g.Findings, "\n")
		if c.want == "" && g.Status != verdict.Pass || c.want != "" && (g.Status != verdict.Fail || !strings.Contains(f, c.want)) {
			t.Errorf("%s: %s\n%s", c.name, g.Status, f)
		}
	}
	g := checkConstants("m.py", consts, ref, nil)
	if g.CheckBundleConfig(ref, nil); g.Status != verdict.Pass {
		t.Errorf("no bundle config: %s %q", g.Status, g.Findings)
	}
}
