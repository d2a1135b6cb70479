package orchestrator

import (
	"context"
	"path/filepath"
	"phase0/internal/testenv"
	"strings"
	"testing"

	"phase0/gate/verdict"
)

// TestMidDeploymentFolderKeepsPeoplesLines: a folder of the tree phase0
// did not create, mid-deployment (TODO.md with the phase checklist and a
// person's needs-human-review line, progress.md kept by hand). A PASS
// ticks Phase 0 and adds the entry, keeps the person's line (and the blank
// line after it) and says what it wrote there; after TODO.md and
// progress.md are restored, the reused PASS enters the same entry and tick
// again; a further reuse finds them up to date and writes nothing.
func TestMidDeploymentFolderKeepsPeoplesLines(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	model := tiny(t, "qwen3")
	scratch := t.TempDir()
	gs := settingsFor(t, scratch)
	gs.Name, gs.ReferenceSteps = "qwen3_0_6b", 0
	mustPass(t, RunBF16(context.Background(), gs, model, "test"))
	generated := mustRead(t, filepath.Join(scratch, "qwen3_0_6b", "qwen3_0_6b_weights.py"))

	llms := upstreamTree(t)
	ws := filepath.Join(llms, "qwen3_0_6b")
	testenv.WriteFile(t, filepath.Join(ws, "qwen3_0_6b_weights.py"), string(handWritten(generated)))
	testenv.WriteFile(t, filepath.Join(ws, "qwen3_0_6b_cpu_helpers.py"), "# upstream helpers\nimport numpy as np\n\n\ndef rms_norm(x, w, eps=1e-6):\n"+
		"    x = np.asarray(x, dtype=np.float32)\n    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * np.asarray(w, dtype=np.float32)\n")
	human := "- needs-human-review: RoPE LUT layout differs from llama32_1b (written by a human, keep)\n"
	todoText := "# Deployment: qwen3_0_6b\n\n## Phase status\n- [ ] 0: Build CPU Reference\n- [ ] 1: Kernel Validation\n\n## Active blockers\n\n" +
		human + "\n## Resolved config (pulled from HF)\n"
	progressText := "# Progress\n\nKept by hand.\n"
	todo, progress := filepath.Join(ws, "TODO.md"), filepath.Join(ws, "docs", "development_progress", "progress.md")
	testenv.WriteFile(t, todo, todoText)
	testenv.WriteFile(t, progress, progressText)
	cache := t.TempDir()
	settings := func() *Settings {
		s := settingsFor(t, llms)
		s.Name, s.CacheDir, s.ReferenceSteps = "qwen3_0_6b", cache, 0
		return s
	}
	ticked := strings.Replace(todoText, "- [ ] 0:", "- [x] 0:", 1)

	r := RunBF16(context.Background(), settings(), model, "test")
	mustPass(t, r)
	if got := mustReadString(t, todo); got != ticked {
		t.Errorf("TODO.md after the PASS:\n%s\nwant (the person's line kept, Phase 0 ticked):\n%s", got, ticked)
	}
	entered := mustReadString(t, progress)
	if !strings.HasPrefix(entered, progressText) || !strings.Contains(entered, "## Phase 0: Build CPU Reference — PASS") {
		t.Errorf("progress.md after the PASS:\n%s", entered)
	}
	if txt := r.Text(); strings.Contains(txt, "left as it was") || !strings.Contains(txt, "written into the folder: docs/development_progress/progress.md, TODO.md") {
		t.Errorf("the text report does not say what the PASS wrote into the folder:\n%s", txt)
	}

	testenv.WriteFile(t, todo, todoText)
	testenv.WriteFile(t, progress, progressText)
	r = RunBF16(context.Background(), settings(), model, "test")
	if r.ReusedFrom == nil || r.Status != verdict.Pass {
		t.Fatalf("not a reused PASS: %s; %s", r.Status, stageDetail(r, "reuse"))
	}
	if got := mustReadString(t, todo); got != ticked {
		t.Errorf("TODO.md after the reused PASS:\n%s\nwant:\n%s", got, ticked)
	}
	if got := mustReadString(t, progress); got != entered {
		t.Errorf("progress.md after the reused PASS:\n%s\nwant the entry the PASS wrote:\n%s", got, entered)
	}

	r = RunBF16(context.Background(), settings(), model, "test")
	if r.ReusedFrom == nil || !strings.Contains(stageDetail(r, "enter"), "up to date") {
		t.Errorf("third run: reused %v, enter %q", r.ReusedFrom != nil, stageDetail(r, "enter"))
	}

	// A progress.md phase0 cannot enter into (a person's unbalanced
	// marker): exit 2, nothing written, and the report does not claim
	// the entry and tick were written.
	broken := progressText + "<!-- phase0:begin -->\nhalf an entry\n"
	testenv.WriteFile(t, progress, broken)
	testenv.WriteFile(t, todo, todoText)
	s := settings()
	s.Fresh = true
	r = RunBF16(context.Background(), s, model, "test")
	if r.Status != verdict.Error || mustReadString(t, progress) != broken || mustReadString(t, todo) != todoText {
		t.Errorf("unbalanced markers: %s, %s; want ERROR with both files as they were", r.Status, r.Error)
	}
	if txt := r.Text(); strings.Contains(txt, "written into the folder") || r.Workspace == nil || len(r.Workspace.Entered) > 0 {
		t.Errorf("an ERROR that wrote nothing says it wrote into the folder:\n%s", txt)
	}
}
