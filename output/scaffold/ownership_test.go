package scaffold

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOwner(t *testing.T) {
	ws := t.TempDir()
	files := renderTiny(t)
	if _, err := Write(ws, files); err != nil {
		t.Fatal(err)
	}
	writeWS(t, ws, "hand.py", "# mine\n")
	for rel, want := range map[string]Ownership{"tiny_qwen3_weights.py": Ours, "hand.py": Foreign, "nothing.py": Absent} {
		if got, err := Owner(ws, rel); err != nil || got != want {
			t.Errorf("Owner(%s) = %v, %v; want %v", rel, got, err, want)
		}
	}
	fifo := filepath.Join(ws, "pipe.py")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Owner(ws, "pipe.py"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Owner on a FIFO: %v", err)
	}
}

func TestModelIDIn(t *testing.T) {
	files := renderTiny(t)
	spec := loadSpec(t, "qwen3")
	if got := ModelIDOf(files, spec); got != spec.ModelID {
		t.Fatalf("ModelIDOf(rendered) = %q, want %q", got, spec.ModelID)
	}
	dir := t.TempDir()
	for src, want := range map[string]string{
		"import os\n\nMODEL_ID = \"Qwen/Qwen3-0.6B\"  # the hub id\n": "Qwen/Qwen3-0.6B",
		"MODEL_ID: str = 'org/m'\n":                                   "org/m",
		"MODEL_ID = (\n    \"org/a-long-name\"\n)\n":                  "org/a-long-name",
		"def f():\n    MODEL_ID = \"inner/x\"\n":                      "",
		"# no id here\nHF_REPO = \"a/b\"\n":                           "",
	} {
		p := filepath.Join(dir, "m.py")
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := ModelIDIn(p); err != nil || got != want {
			t.Errorf("ModelIDIn(%q) = %q, %v; want %q", src, got, err, want)
		}
	}
}

func TestCheckFolder(t *testing.T) {
	llms := t.TempDir()
	mk := func(rel, content string) {
		p := filepath.Join(llms, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("verify/runners/hf_runner.py", "")
	mk("smolvla/smolvla_vision_weights.py", "")
	mk("qwen3_0_6b/qwen3_0_6b_weights.py", "")
	mk("mine/.phase0-manifest.json", "{}")
	mk("half/.phase0.lock", "")
	mk("hf_models.txt", "")
	// `phase0 reference` before any run: the lock and a recording of phase0's
	// (keyed); a reference/ folder of someone else's is not phase0's.
	meta := `{"format":"phase0-reference/1","role":"reference","runner":"bundled","dtype":"bfloat16","tokenizer_sha256":"t","prompts":["p"],"canonical_prompt":0,"decode_steps":1,"top_k":1,"tensors_sha256":"` + strings.Repeat("0", 64) + `","tensors_bytes":0,"key_sha256":"` + strings.Repeat("a", 64) + `"}`
	mk("recorded/.phase0.lock", "")
	mk("recorded/reference/reference.json", meta)
	mk("recorded/.report.md.tmp-1", "")
	mk("notes/.phase0.lock", "")
	mk("notes/reference/notes.txt", "mine")
	mk("unkeyed/.phase0.lock", "")
	mk("unkeyed/reference/reference.json", strings.Replace(meta, `,"key_sha256":"`+strings.Repeat("a", 64)+`"`, "", 1))
	for dir, ours := range map[string]bool{"recorded": true, "half": true} {
		if got, err := Leftovers(filepath.Join(llms, dir)); err != nil || got != ours {
			t.Errorf("Leftovers(%s) = %v, %v; want %v", dir, got, err, ours)
		}
	}
	if err := os.MkdirAll(filepath.Join(llms, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"verify": "one of the llms tree's own folders", "Shared": "one of the llms tree's own folders", "docs": "own folders",
		"smolvla": "is not a model workspace", "hf_models.txt": "is not a folder",
		"qwen3_0_6b": "", "mine": "", "half": "", "empty": "", "new_model": "", "recorded": "",
		"notes": "reference is not phase0's", "unkeyed": "reference is not phase0's",
	} {
		err := CheckFolder(llms, name)
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--name")) {
			t.Errorf("CheckFolder(%s) = %v, want %q", name, err, want)
		}
	}
}

// MODEL_ID is read back as written, in either quote style black leaves it
// (a local folder named my"model is written 'my"model').
func TestModelIDInReadsQuotedNames(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"org/Model-7B", `my"model`, `it's "x"`, `my"model"""`, strings.Repeat("m", 100) + `"`} {
		path := filepath.Join(dir, "w.py")
		if err := os.WriteFile(path, []byte("import x\n\n"+pyAssign("MODEL_ID", id)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := ModelIDIn(path); err != nil || got != id {
			t.Errorf("ModelIDIn of %q: %q, %v", id, got, err)
		}
	}
}
