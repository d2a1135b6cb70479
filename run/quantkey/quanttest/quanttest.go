// Package quanttest is the quantized route's test kit: upstream's tree of
// quantized folders with the fixtures' bundle and references in an offline
// HF cache, the settings of a run in it, and the worker's re-execution of a
// test binary (the tests of run/modelrun and run/quantkey).
package quanttest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"phase0/internal/testenv"
	"phase0/python/warm"
	"phase0/python/worker"
	"phase0/run/orchestrator"
)

// The fixture tree's ids and folder.
const (
	BundleID   = "FastFlowLM/Llama-3.2-1B-NPU2"
	LlamaBase  = "meta-llama/Llama-3.2-1B"
	LlamaInstr = "meta-llama/Llama-3.2-1B-Instruct"
	Q4nxFolder = "llama32_1b_q4nx"
)

// Main runs the tests; the worker re-executes the test binary, which must
// act as the worker then. sessions are closed at the end.
func Main(m *testing.M, sessions *warm.Sessions) {
	if len(os.Args) > 1 && os.Args[1] == worker.Subcommand {
		os.Exit(worker.Main())
	}
	code := m.Run()
	sessions.Close()
	os.Exit(code)
}

// Settings are a test run's in the tree llms, lent sessions (nil: a worker
// of its own); the progress is logged when the test fails.
func Settings(t *testing.T, llms string, sessions *warm.Sessions) *orchestrator.Settings {
	t.Helper()
	var progress bytes.Buffer
	var s *orchestrator.Settings
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("progress:\n%s", progress.String())
		}
		testenv.DumpFacts(t, progress.String, s.LLMSDir, s.OutDir)
	})
	s = &orchestrator.Settings{
		LLMSDir: llms, Python: testenv.Python(t), PyShimDir: testenv.PyShim(), MaxSeq: 64, Timeout: 5 * time.Minute,
		MemoryCheck: true, AttentionFallback: true, Progress: &progress, Sessions: sessions,
	}
	// A folder without verify/ is not an llms tree: it only holds the workspaces.
	if _, err := os.Stat(filepath.Join(llms, "verify", "runners", "hf_runner.py")); llms != "" && err != nil {
		s.LLMSDir, s.OutDir = "", llms
	}
	return s
}

// ReadString is the file at path.
func ReadString(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Tree lays out a programming_examples copy as upstream has it: T/llms
// (verify/, the bf16 folders the quantized modules import their containers
// from, the quantized folders) beside T/fused_decode and
// T/matrix_vector_multiplication. It returns T/llms.
func Tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	testenv.CopyTestData(t, root, "quant")
	llms := filepath.Join(root, "llms")
	testenv.CopyTestData(t, filepath.Join(llms, "verify"), "llms/verify")
	for _, name := range []string{"llama32_1b", "qwen3_0_6b", "qwen25_0_5b"} {
		testenv.CopyTestData(t, filepath.Join(llms, name), "upstream/"+name)
	}
	// A config function and a RoPE table, as llama31_8b_q4nx has them
	// (llama31_8b_config(), generate_rope_lut): gate 3 calls the one and
	// judges the other by behaviour.
	module := filepath.Join(llms, "llama32_1b_q4nx", "llama32_1b_q4nx_weights.py")
	testenv.WriteFile(t, module, ReadString(t, module)+tinyConfigAndRope)
	// The tree's other folders' ids, as upstream names them (the Gemma 3
	// and Phi-4-mini folders without their modules: not validated here).
	testenv.WriteFile(t, filepath.Join(llms, "gemma3_4b_q4nx", "verify_adapter.py"),
		"MODEL_CHOICES = {\"instruct\": \"unsloth/gemma-3-4b-it\"}\nQ4NX_MODEL_SOURCE = \"FastFlowLM/Gemma3-4B-NPU2\"\n")
	testenv.WriteFile(t, filepath.Join(llms, "phi4_mini_q4nx", "verify_adapter.py"),
		"MODEL_CHOICES = {\"instruct\": \"microsoft/Phi-4-mini-instruct\"}\nQ4NX_MODEL_SOURCE = \"FastFlowLM/Phi4-mini-Instruct-NPU2\"\n")
	testenv.WriteFile(t, filepath.Join(llms, "smolvla", "smolvla_inference.py"),
		"POLICY = \"lerobot/smolvla_base\"\nVLM = \"HuggingFaceTB/SmolVLM2-500M-Video-Instruct\"\n")
	return llms
}

// tinyConfigAndRope is what upstream's llama31_8b_q4nx module adds to a
// Q4NX loader, for the tiny dimensions.
const tinyConfigAndRope = `

class TinyConfig:
    def __init__(self):
        self.n_layers, self.emb_dim, self.n_heads, self.head_dim = 2, 256, 4, 64
        self.n_kv_heads, self.hidden_dim, self.vocab_size, self.rope_base = 2, 512, 512, 500000.0


def llama32_1b_q4nx_config():
    return TinyConfig()


def generate_rope_lut(config=None, seq_len=2048, dtype=bfloat16):
    config = config or llama32_1b_q4nx_config()
    exps = np.arange(0, config.head_dim, 2, dtype=np.int64).astype(np.float32) / config.head_dim
    inv = (1.0 / (config.rope_base**exps)).astype(np.float32)
    angles = np.outer(np.arange(seq_len, dtype=np.float32), inv)
    return np.concatenate([np.cos(angles), np.sin(angles)], axis=1).astype(dtype)
`

// Repo is a FastFlowLM-style repo folder: the bundle, the
// reference's config.json and a model card declaring base.
func Repo(t *testing.T, fx, bundle, base string) string {
	t.Helper()
	dir := t.TempDir()
	testenv.WriteFile(t, filepath.Join(dir, "model.q4nx"), ReadString(t, filepath.Join(fx, "bundles", bundle, "model.q4nx")))
	testenv.WriteFile(t, filepath.Join(dir, "config.json"), ReadString(t, filepath.Join(fx, "ref", "config.json")))
	testenv.WriteFile(t, filepath.Join(dir, "README.md"), "---\nlicense: llama3.2\nbase_model: "+base+"\ntags:\n- q4nx\n---\n\n# Llama-3.2-1B-NPU2\n")
	return dir
}

// CleanTree is Tree with the clean bundle and both
// references in an offline HF cache: the settings of a run in it, and a
// check that the tree is byte for byte as it was, with no new file.
func CleanTree(t *testing.T, sessions *warm.Sessions) (*orchestrator.Settings, func(*testing.T)) {
	t.Helper()
	fx := testenv.QuantFixtures(t)
	llms := Tree(t)
	s := Settings(t, llms, sessions)
	s.CacheDir = t.TempDir()
	s.Env = testenv.OfflineHub(t, map[string]string{
		LlamaInstr: filepath.Join(fx, "ref"),
		LlamaBase:  filepath.Join(fx, "other"),
		BundleID:   Repo(t, fx, "clean", LlamaInstr),
	})
	before := testenv.SnapshotTree(t, llms)
	return s, func(t *testing.T) {
		t.Helper()
		testenv.SameTreeAs(t, llms, before)
	}
}
