package quantfolder

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"phase0/gate/quant"
	"phase0/gate/verdict"
)

// TestRopeTables: the RoPE table a folder's prefill builds with a function
// imported inside a method from a bf16 folder of the tree is found (as
// upstream's llama32_1b_q4nx does, from llama32_1b_weights); a decode's own
// RoPE function gives its θ default to check; an import the tree cannot
// resolve and a table of the folder's own with no θ are named as unjudged.
func TestRopeTables(t *testing.T) {
	llms := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(llms, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("llama32_1b/llama32_1b_weights.py", "def generate_rope_lut(config=None, seq_len=2048):\n    pass\n")
	write("llama32_1b_q4nx/llama32_1b_q4nx_weights.py", "class Q4nxModel:\n    pass\n")
	write("llama32_1b_q4nx/llama32_1b_q4nx_prefill.py", "class LlamaQ4nxPrefill:\n    def __init__(self):\n        from llama32_1b_weights import LlamaConfig, generate_rope_lut\n        from llama32_1b_prefill import compile_all_kernels\n        self._rope_lut = generate_rope_lut(LlamaConfig())\n")
	write("llama32_1b_q4nx/llama32_1b_q4nx_inference.py", "def _llama3_rope(\n    n_pos, dim, theta=10000.0, factor=32.0\n):\n    pass\n")
	q := &Folder{Dir: filepath.Join(llms, "llama32_1b_q4nx")}
	r := q.RopeTables(llms)
	if want := []string{filepath.Join(llms, "llama32_1b", "llama32_1b_weights.py")}; !reflect.DeepEqual(r.Borrowed, want) || r.File != "llama32_1b_q4nx_prefill.py" {
		t.Errorf("borrowed %v from %s, want %v from the prefill", r.Borrowed, r.File, want)
	}
	if r.Theta["_llama3_rope(theta)"] != 10000 || r.ThetaFiles["_llama3_rope(theta)"] != "llama32_1b_q4nx_inference.py" || len(r.Unjudged) != 0 {
		t.Errorf("θ defaults %v in %v, unjudged %q", r.Theta, r.ThetaFiles, r.Unjudged)
	}
	write("llama32_1b_q4nx/extra.py", "from (\n  gone_weights\n) import x\nfrom gone_weights import (\n    LlamaConfig,\n    generate_rope_lut,\n)\ndef build_rope_table(n):\n    pass\n")
	r = q.RopeTables(llms)
	want := []string{"extra.py imports generate_rope_lut from gone_weights, which is not a module of the tree", "extra.py defines build_rope_table(), a RoPE table of its own with no θ default to check"}
	if !reflect.DeepEqual(r.Unjudged, want) {
		t.Errorf("unjudged %q, want %q", r.Unjudged, want)
	}
}

// TestFamilyJudgedTables: Phi-4-mini's prefill imports generate_rope_lut
// from the folder's own weights module, whose tables the family's facts
// judged: gate 3 does not WARN that it "could not be judged (Python is not
// ready)", as the real-shaped run against the tree did. A table borrowed
// from another module is still named.
func TestFamilyJudgedTables(t *testing.T) {
	llms := t.TempDir()
	dir := filepath.Join(llms, "phi4_mini_q4nx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	module := filepath.Join(dir, "phi4_mini_q4nx_weights.py")
	for name, text := range map[string]string{
		"phi4_mini_q4nx_weights.py": "def generate_rope_lut(config=None, seq_len=2048):\n    pass\n",
		"phi4_mini_q4nx_prefill.py": "from phi4_mini_q4nx_weights import generate_rope_lut, phi4_mini_config\nLUT = generate_rope_lut(phi4_mini_config())\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := (&Folder{Dir: dir}).RopeTables(llms)
	if !reflect.DeepEqual(r.Borrowed, []string{module}) {
		t.Fatalf("borrowed %v, want the weights module %s", r.Borrowed, module)
	}
	r.FamilyJudged(module)
	c := &quant.Constants{Section: verdict.Section{Status: verdict.Pass}}
	r.Warn(c, false)
	if c.Status != verdict.Pass || len(c.Findings) != 0 {
		t.Errorf("gate 3 after the family's facts: %s %q", c.Status, c.Findings)
	}
	r = (&Folder{Dir: dir}).RopeTables(llms)
	r.FamilyJudged(filepath.Join(llms, "other", "other_weights.py"))
	r.Warn(c, false)
	if c.Status != verdict.Warn || len(c.Findings) != 1 {
		t.Errorf("a table of another module: %s %q", c.Status, c.Findings)
	}
}
