package scaffold

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func scaffoldWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	if _, err := Write(ws, renderTiny(t)); err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestUpsertPhase0Entry(t *testing.T) {
	ws := scaffoldWorkspace(t)
	progress := filepath.Join(ws, "docs", "development_progress", "progress.md")
	header := readWS(t, ws, "docs/development_progress/progress.md")

	entry := "## Phase 0: Build CPU Reference — PASS\n\n- model: phase0-test/Tiny-Qwen3\n"
	if err := upsertPhase0Entry(progress, entry); err != nil {
		t.Fatal(err)
	}
	first := readWS(t, ws, "docs/development_progress/progress.md")
	want := header + "\n" + Phase0Begin + "\n" + strings.TrimSpace(entry) + "\n" + Phase0End + "\n"
	if first != want {
		t.Fatalf("after first upsert:\n%s\nwant:\n%s", first, want)
	}

	if err := upsertPhase0Entry(progress, entry); err != nil {
		t.Fatal(err)
	}
	if again := readWS(t, ws, "docs/development_progress/progress.md"); again != first {
		t.Fatalf("upsert is not idempotent:\n%s", again)
	}

	// The user adds a later phase; a new Phase 0 entry replaces ours in place.
	if err := os.WriteFile(progress, []byte(first+"\n## Phase 1\n\nnotes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := upsertPhase0Entry(progress, "## Phase 0 — FAIL\n"); err != nil {
		t.Fatal(err)
	}
	got := readWS(t, ws, "docs/development_progress/progress.md")
	if strings.Count(got, Phase0Begin) != 1 || strings.Contains(got, "PASS") || !strings.Contains(got, "## Phase 0 — FAIL") ||
		!strings.HasSuffix(got, "\n## Phase 1\n\nnotes\n") || !strings.HasPrefix(got, header) {
		t.Fatalf("replacement went wrong:\n%s", got)
	}

	// phase0's own edit is recorded: a re-scaffold keeps the file without complaint.
	m, err := readManifest(ws)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files["docs/development_progress/progress.md"] != sha256Hex([]byte(got)) {
		t.Error("manifest does not record phase0's edit of progress.md")
	}
	if _, err := Write(ws, renderTiny(t)); err != nil {
		t.Errorf("re-scaffold after upsert: %v", err)
	}
}

func TestUpsertPhase0EntryBrokenMarkers(t *testing.T) {
	for _, text := range []string{
		"x\n" + Phase0Begin + "\nentry\n",
		"x\n" + Phase0End + "\n" + Phase0Begin + "\n",
		Phase0Begin + "\na\n" + Phase0End + "\n" + Phase0Begin + "\nb\n" + Phase0End + "\n",
	} {
		p := filepath.Join(t.TempDir(), "progress.md")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := upsertPhase0Entry(p, "new"); err == nil {
			t.Errorf("no error for %q", text)
		}
		if got, _ := os.ReadFile(p); string(got) != text {
			t.Errorf("file modified despite the error: %q", got)
		}
	}
}

func TestSetPhase0Status(t *testing.T) {
	ws := scaffoldWorkspace(t)
	todo := filepath.Join(ws, "TODO.md")
	original := readWS(t, ws, "TODO.md")

	if err := setPhase0Status(todo, false, []string{"HF baseline: top-1 is NaN", "config mismatch:\nrope_theta"}); err != nil {
		t.Fatal(err)
	}
	failed := readWS(t, ws, "TODO.md")
	wantBlock := "## Active blockers\n\n- needs-human-review: HF baseline: top-1 is NaN <!-- phase0 -->\n- needs-human-review: config mismatch: rope_theta <!-- phase0 -->\n\n## Phase 2 prerequisites"
	if !strings.Contains(failed, wantBlock) || !strings.Contains(failed, "- [ ] 0: Build CPU Reference") {
		t.Fatalf("after failure:\n%s", failed)
	}

	if err := setPhase0Status(todo, false, []string{"HF baseline: top-1 is NaN", "config mismatch:\nrope_theta"}); err != nil {
		t.Fatal(err)
	}
	if again := readWS(t, ws, "TODO.md"); again != failed {
		t.Fatalf("repeated failure is not idempotent:\n%s", again)
	}

	if err := setPhase0Status(todo, true, nil); err != nil {
		t.Fatal(err)
	}
	passed := readWS(t, ws, "TODO.md")
	if want := strings.Replace(original, "- [ ] 0: Build CPU Reference", "- [x] 0: Build CPU Reference", 1); passed != want {
		t.Fatalf("after pass:\n%s\nwant:\n%s", passed, want)
	}
	if _, err := Write(ws, renderTiny(t)); err != nil {
		t.Errorf("re-scaffold after setPhase0Status: %v", err)
	}
	if !strings.Contains(readWS(t, ws, "TODO.md"), "- [x] 0: Build CPU Reference") {
		t.Error("re-scaffold lost the Phase 0 tick")
	}
}

func TestSetPhase0StatusKeepsUserBlockersAndAddsSection(t *testing.T) {
	p := filepath.Join(t.TempDir(), "TODO.md")
	text := "# Deployment: x\n\n- [x] 0: Build CPU Reference\n\n## Active blockers\n\n- waiting for the NPU driver\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := setPhase0Status(p, false, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	want := "# Deployment: x\n\n- [ ] 0: Build CPU Reference\n\n## Active blockers\n\n" +
		"- needs-human-review: Phase 0 failed without a recorded reason <!-- phase0 -->\n- waiting for the NPU driver\n"
	if string(got) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}

	noSection := "# Deployment: x\n\n- [ ] 0: Build CPU Reference\n"
	if err := os.WriteFile(p, []byte(noSection), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := setPhase0Status(p, false, []string{"weights: missing lm_head"}); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(p)
	if want := noSection + "\n## Active blockers\n\n- needs-human-review: weights: missing lm_head <!-- phase0 -->\n"; string(got) != want {
		t.Fatalf("got:\n%q\nwant:\n%q", got, want)
	}
}

func TestSetPhase0StatusNeedsCheckbox(t *testing.T) {
	p := filepath.Join(t.TempDir(), "TODO.md")
	if err := os.WriteFile(p, []byte("# my own todo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := setPhase0Status(p, true, nil); !errors.Is(err, ErrTodoLayout) {
		t.Fatalf("error = %v, want ErrTodoLayout", err)
	}
}

// TestPassKeepsAPersonsReviewLine: a PASS removes only the blocker lines
// phase0 wrote (marked), never a person's line with the same prefix, nor
// the blank line after it; an older phase0's unmarked lines go only when
// the file is as phase0 last wrote it.
func TestPassKeepsAPersonsReviewLine(t *testing.T) {
	human := "- needs-human-review: RoPE LUT layout differs from llama32_1b (written by a human, keep)\n"
	text := "# Deployment: m\n\n## Phase status\n- [ ] 0: Build CPU Reference\n- [ ] 1: Kernel Validation\n\n## Active blockers\n\n" +
		human + "\n## Resolved config (pulled from HF)\n"
	p := filepath.Join(t.TempDir(), "TODO.md")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := setPhase0Status(p, false, []string{"weights: missing lm_head"}); err != nil {
		t.Fatal(err)
	}
	failed, _ := os.ReadFile(p)
	if !strings.Contains(string(failed), "- needs-human-review: weights: missing lm_head <!-- phase0 -->\n") || !strings.Contains(string(failed), human) {
		t.Fatalf("after a failure:\n%s", failed)
	}
	if err := setPhase0Status(p, true, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if want := strings.Replace(text, "- [ ] 0:", "- [x] 0:", 1); string(got) != want {
		t.Fatalf("after a PASS:\n%s\nwant:\n%s", got, want)
	}

	// Legacy: phase0's own workspace, its TODO.md as phase0 last wrote it
	// with an unmarked line (an older phase0's): the PASS removes it.
	ws := scaffoldWorkspace(t)
	todo := filepath.Join(ws, "TODO.md")
	legacy := strings.Replace(readWS(t, ws, "TODO.md"), "## Active blockers\n", "## Active blockers\n\n- needs-human-review: old reason\n", 1)
	if !strings.Contains(legacy, "old reason") {
		t.Fatalf("the template has no Active blockers section:\n%s", legacy)
	}
	if err := writeTracked(todo, []byte(legacy)); err != nil {
		t.Fatal(err)
	}
	if err := setPhase0Status(todo, true, nil); err != nil {
		t.Fatal(err)
	}
	if got := readWS(t, ws, "TODO.md"); strings.Contains(got, "old reason") {
		t.Errorf("an older phase0's line in phase0's own TODO.md was kept:\n%s", got)
	}
}
