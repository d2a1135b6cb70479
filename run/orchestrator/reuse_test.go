package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"phase0/gate/verdict"
	"phase0/output/report"
	"phase0/output/scaffold"
)

// cloneVenv makes a venv whose site-packages links every entry of the real
// one, so a test can install a distribution into it without touching the
// shared venv. It returns the clone's python and its site-packages.
func cloneVenv(t *testing.T, python string) (string, string) {
	t.Helper()
	realPrefix := filepath.Dir(filepath.Dir(python))
	sites, _ := filepath.Glob(filepath.Join(realPrefix, "lib", "python3*", "site-packages"))
	if len(sites) != 1 {
		t.Skipf("%s is not a venv with one site-packages (%v)", python, sites)
	}
	target, err := filepath.EvalSymlinks(python)
	if err != nil {
		t.Fatal(err)
	}
	prefix := t.TempDir()
	site := filepath.Join(prefix, "lib", filepath.Base(filepath.Dir(sites[0])), "site-packages")
	for _, dir := range []string{filepath.Join(prefix, "bin"), site} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(realPrefix, "pyvenv.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(prefix, "pyvenv.cfg"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(prefix, "bin", "python")); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(sites[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(sites[0], e.Name()), filepath.Join(site, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(prefix, "bin", "python"), site
}

// copyDir copies a flat model folder (the shared tiny models must not be touched).
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

func stageNames(r *report.Report) []string {
	var out []string
	for _, s := range r.Stages {
		out = append(out, s.Name)
	}
	return out
}

func stageDetail(r *report.Report, name string) string {
	for _, s := range r.Stages {
		if s.Name == name {
			return string(s.Status) + ": " + s.Detail
		}
	}
	return ""
}

// TestRunReuse runs one model through every input that must invalidate a
// recorded verdict, each followed by an unchanged run that must reuse it.
func TestRunReuse(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	s := settingsFor(t, t.TempDir())
	py, site := cloneVenv(t, s.Python)
	s.Python, s.Sessions = py, ownSessions(t)
	modelDir := copyDir(t, tiny(t, "llama-llama3"))
	version := "test"
	ws := filepath.Join(s.OutDir, scaffold.DeriveName(modelDir))
	reportJSON := filepath.Join(ws, "docs", "development_progress", "phase0", "report.json")

	// full runs everything, records a PASS and its inputs, and says why it
	// did not reuse (the reason must name want).
	full := func(t *testing.T, want string) *report.Report {
		t.Helper()
		r := RunBF16(context.Background(), s, modelDir, version)
		if r.ReusedFrom != nil {
			t.Fatalf("reused %+v, want a full run because %s", r.ReusedFrom, want)
		}
		if got := stageDetail(r, "reuse"); !strings.Contains(got, want) {
			t.Errorf("reuse stage %q, want it to name %q", got, want)
		}
		if stageDetail(r, "hf_baseline") == "" && r.Status == verdict.Pass {
			t.Errorf("a full run without the baseline stage: %v", stageNames(r))
		}
		return r
	}
	// reused must start no Python: after the llms-dir check, the only stage is reuse.
	reused := func(t *testing.T, recorded time.Time) {
		t.Helper()
		r := RunBF16(context.Background(), s, modelDir, version)
		mustPass(t, r)
		if r.ReusedFrom == nil || r.ReusedFrom.Path != reportJSON || !r.ReusedFrom.Recorded.Equal(recorded) {
			t.Fatalf("reused_from %+v, want %s recorded %s; stages %v (%s)", r.ReusedFrom, reportJSON, recorded, stageNames(r), stageDetail(r, "reuse"))
		}
		if names := stageNames(r); !slices.Equal(names, []string{"llms_dir", "reuse"}) {
			t.Errorf("stages %v, want llms_dir and reuse only (no Python, no worker)", names)
		}
		if r.Gates.HFBaseline == nil || r.Gates.HFBaseline.Status != verdict.Pass || r.Workspace == nil {
			t.Errorf("the reused report lacks the recorded gates or workspace: %+v", r.Gates)
		}
		if !strings.Contains(r.Text(), "reused: inputs unchanged since") {
			t.Errorf("text does not say the verdict was reused:\n%s", r.Text())
		}
		js, _ := r.JSON()
		if !strings.Contains(string(js), `"reused_from"`) {
			t.Errorf("JSON lacks reused_from")
		}
	}

	r := full(t, "no recorded verdict")
	mustPass(t, r)
	if got := stageDetail(r, "record_inputs"); !strings.HasPrefix(got, "PASS") {
		t.Fatalf("record_inputs %q", got)
	}
	reused(t, r.Started)

	step := func(name, want string, change func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			change(t)
			time.Sleep(time.Second) // report times have one-second resolution
			r := full(t, want)
			mustPass(t, r)
			reused(t, r.Started)
		})
	}
	weightsFile := filepath.Join(modelDir, "model.safetensors")
	step("model file touched", "model file model.safetensors changed", func(t *testing.T) {
		later := time.Now().Add(time.Minute)
		if err := os.Chtimes(weightsFile, later, later); err != nil {
			t.Fatal(err)
		}
	})
	step("model file replaced", "model file model.safetensors changed", func(t *testing.T) {
		fi, err := os.Stat(weightsFile)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(weightsFile)
		if err != nil {
			t.Fatal(err)
		}
		tmp := weightsFile + ".new"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// Same bytes, same mtime: only the inode tells.
		if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, weightsFile); err != nil {
			t.Fatal(err)
		}
	})
	step("prompt", "setting prompt changed", func(t *testing.T) { s.Prompt = "The capital of Italy is" })
	step("phase0 version", "phase0 version changed", func(t *testing.T) { version = "test-2" })
	step("python environment", "phase0-reuse-probe-1.0.dist-info was installed", func(t *testing.T) {
		dist := filepath.Join(site, "phase0-reuse-probe-1.0.dist-info")
		if err := os.Mkdir(dist, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dist, "METADATA"), []byte("Metadata-Version: 2.1\nName: phase0-reuse-probe\nVersion: 1.0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("fresh", func(t *testing.T) {
		s.Fresh = true
		r := full(t, "--fresh")
		s.Fresh = false
		mustPass(t, r)
		reused(t, r.Started)
	})

	t.Run("generated file edited", func(t *testing.T) {
		module := filepath.Join(ws, scaffold.DeriveName(modelDir)+"_weights.py")
		orig, err := os.ReadFile(module)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(module, append(append([]byte{}, orig...), "# edited\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		changed := "workspace file " + filepath.Base(module) + " changed"
		// The full run validates the user's edit in place (nothing is
		// overwritten) and records that verdict, which the next run reuses.
		r := full(t, changed)
		mustPass(t, r)
		if r.Workspace == nil || r.Workspace.Mode != report.ModeValidatedExisting {
			t.Errorf("workspace %+v, want the edited module validated in place", r.Workspace)
		}
		reused(t, r.Started)
		// The validated module, edited again (same size, mtime put back):
		// stamped although phase0 did not write it.
		rewriteInPlace(t, module, func(b []byte) []byte { return []byte(strings.Replace(string(b), "# edited", "# edites", 1)) })
		r = full(t, changed)
		mustPass(t, r)
		reused(t, r.Started)
		// Restored, the file is phase0's again: one full run, then reuse.
		if err := os.WriteFile(module, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		r = full(t, "changed")
		mustPass(t, r)
		reused(t, r.Started)
	})

	t.Run("model changed during the run", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		touched := func() {
			later := time.Now().Add(2 * time.Minute)
			if err := os.Chtimes(weightsFile, later, later); err != nil {
				t.Error(err)
			}
		}
		// cancelOn calls its func when the generate stage is reported:
		// the model is touched after the reuse stage stamped it.
		progress := s.Progress
		s.Progress = &cancelOn{stage: "generate", cancel: touched}
		s.Fresh = true
		r := RunBF16(ctx, s, modelDir, version)
		s.Progress, s.Fresh = progress, false
		mustPass(t, r)
		if got := stageDetail(r, "record_inputs"); !strings.Contains(got, "during the run") {
			t.Fatalf("record_inputs %q, want the inputs left unrecorded", got)
		}
		full(t, "is not a reusable PASS")
	})

	t.Run("report edited", func(t *testing.T) {
		data, err := os.ReadFile(reportJSON)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(reportJSON, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		r := full(t, "report.json changed since it was recorded")
		mustPass(t, r)
	})
}
