package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
)

// blobModel lays a model folder out as the HF cache does: every file of the
// snapshot is a link to ../../blobs/<sha256>. It returns the snapshot.
func blobModel(t *testing.T, from string) string {
	t.Helper()
	root := t.TempDir()
	snap := filepath.Join(root, "snapshots", "0123456789abcdef0123456789abcdef01234567")
	for _, d := range []string{snap, filepath.Join(root, "blobs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
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
		putBlob(t, snap, e.Name(), data, nil)
	}
	return snap
}

// putBlob writes data as a new blob (named by its hash plus salt) and points
// snap/name at it; with like set, the blob takes like's times (touch -r).
func putBlob(t *testing.T, snap, name string, data []byte, like os.FileInfo) {
	t.Helper()
	sum := sha256.Sum256(append(append([]byte{}, data...), []byte(time.Now().String())...))
	blob := filepath.Join(snap, "..", "..", "blobs", hex.EncodeToString(sum[:]))
	if err := os.WriteFile(blob, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if like != nil {
		if err := os.Chtimes(blob, like.ModTime(), like.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(snap, name)
	os.Remove(link)
	if err := os.Symlink(filepath.Join("..", "..", "blobs", filepath.Base(blob)), link); err != nil {
		t.Fatal(err)
	}
}

// rewriteInPlace changes a file's bytes through its own inode and puts its
// size and mtime back: only its ctime (and content) tell.
func rewriteInPlace(t *testing.T, path string, edit func([]byte) []byte) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := edit(append([]byte{}, data...))
	if len(changed) != len(data) || string(changed) == string(data) {
		t.Fatalf("%s: the edit must keep the size and change the bytes", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(changed, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(path); after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("%s: size or mtime moved", path)
	}
}

// TestReuseIsNeverStale applies, one by one, every way a recorded PASS or a
// recorded reference went stale, each with the manipulation a hostile user
// would use, and checks that the next run does not reuse it and names the
// input that changed.
func TestReuseIsNeverStale(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	llms := t.TempDir()
	testenv.CopyTestData(t, filepath.Join(llms, "verify"), "llms/verify")
	// The runner imports a helper beside the tree and one in a sub-folder
	// of verify/runners: code that the verdict depends on, anywhere.
	runner := filepath.Join(llms, "verify", "runners", "hf_runner.py")
	code, err := os.ReadFile(runner)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(code), "from __future__ import annotations\n",
		"from __future__ import annotations\n\nimport mylib  # noqa: F401\nfrom runners.lib import extra  # noqa: F401\n", 1)
	if src == string(code) {
		t.Fatal("the fixture runner has no __future__ import to put the helper imports after")
	}
	testenv.WriteFile(t, runner, src)
	mylib := filepath.Join(llms, "mylib.py")
	extra := filepath.Join(llms, "verify", "runners", "lib", "extra.py")
	testenv.WriteFile(t, mylib, "SCALE = 1.0\n")
	testenv.WriteFile(t, extra, "OFFSET = 0.0\n")
	testenv.WriteFile(t, filepath.Join(llms, "verify", "runners", "lib", "__init__.py"), "")

	s := settingsFor(t, llms)
	py, site := cloneVenv(t, s.Python)
	s.Sessions = ownSessions(t) // the clone's runs share a session; the sitecustomize.py added below is only stamped, never run
	s.Python, s.ReferenceSteps, s.Name = py, 2, "stale"
	modelDir := blobModel(t, tiny(t, "llama-llama3"))
	ws := filepath.Join(llms, "stale")
	refDir := filepath.Join(ws, "reference")

	full := func(t *testing.T, want string) *report.Report {
		t.Helper()
		r := RunBF16(context.Background(), s, modelDir, "test")
		mustPass(t, r)
		if r.ReusedFrom != nil {
			t.Fatalf("reused %+v, want a full run because %s", r.ReusedFrom, want)
		}
		if got := stageDetail(r, "reuse"); !strings.Contains(got, want) {
			t.Errorf("reuse stage %q, want it to name %q", got, want)
		}
		if r.Reference == nil || r.Reference.Status != verdict.Pass {
			t.Fatalf("reference %+v", r.Reference)
		}
		return r
	}
	refused := func(t *testing.T, want string) {
		t.Helper()
		refusedFor(t, s, modelDir, want)
	}
	reused := func(t *testing.T) {
		t.Helper()
		r := RunBF16(context.Background(), s, modelDir, "test")
		mustPass(t, r)
		if r.ReusedFrom == nil {
			t.Fatalf("an unchanged re-run was not reused: %s", stageDetail(r, "reuse"))
		}
	}

	r := full(t, "no recorded verdict")
	if r.Reference.Reused {
		t.Fatal("the first recording says reused")
	}
	reused(t)

	t.Run("runner helper edited: verdict and reference", func(t *testing.T) {
		rewriteInPlace(t, mylib, func(b []byte) []byte { return []byte(strings.Replace(string(b), "1.0", "0.0", 1)) })
		r := full(t, "python source "+mylib+" changed")
		if r.Reference.Reused || !strings.Contains(strings.Join(r.Reference.Why, "; "), "mylib.py") {
			t.Errorf("reference %s (why %v), want it re-recorded because mylib.py changed", r.Reference.Summary, r.Reference.Why)
		}
		reused(t)
	})
	t.Run("model file swapped in with touch -r and mv: verdict and reference", func(t *testing.T) {
		weights := filepath.Join(modelDir, "model.safetensors")
		fi, err := os.Stat(weights)
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(weights)
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(t.TempDir(), "model.safetensors")
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		// The link now points at a regular file of the same size and mtime.
		if err := os.Remove(weights); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, weights); err != nil {
			t.Fatal(err)
		}
		r := full(t, "model file model.safetensors changed")
		if r.Reference.Reused || !strings.Contains(strings.Join(r.Reference.Why, "; "), "model files") {
			t.Errorf("reference %s (why %v), want it re-recorded because the model files changed", r.Reference.Summary, r.Reference.Why)
		}
		reused(t)
	})

	// From here on each manipulation is left in place and the next one is
	// of an input checked earlier, so each check names the newest change.
	t.Run("reference corrupted", func(t *testing.T) {
		rewriteInPlace(t, filepath.Join(refDir, "reference.safetensors"), func(b []byte) []byte {
			b[len(b)-1] ^= 0xff
			return b
		})
		refused(t, "reference file reference.safetensors changed")
	})
	t.Run("reference deleted", func(t *testing.T) {
		if err := os.RemoveAll(refDir); err != nil {
			t.Fatal(err)
		}
		refused(t, "the recorded reference "+refDir+" is gone")
	})
	t.Run("sitecustomize added", func(t *testing.T) {
		testenv.WriteFile(t, filepath.Join(site, "sitecustomize.py"), "import numpy\n")
		refused(t, "import folder "+site+" changed")
	})
	t.Run("helper beside the tree rewritten in place", func(t *testing.T) {
		rewriteInPlace(t, mylib, func(b []byte) []byte { return []byte(strings.Replace(string(b), "0.0", "2.0", 1)) })
		refused(t, "python source "+mylib+" changed")
	})
	t.Run("generated module edited", func(t *testing.T) {
		module := filepath.Join(ws, "stale_weights.py")
		rewriteInPlace(t, module, func(b []byte) []byte { return []byte(strings.Replace(string(b), "w_gate", "w_gatf", 1)) })
		refused(t, "workspace file stale_weights.py changed")
	})
	t.Run("helper in a sub-folder of verify/runners rewritten in place", func(t *testing.T) {
		rewriteInPlace(t, extra, func(b []byte) []byte { return []byte(strings.Replace(string(b), "0.0", "1.0", 1)) })
		refused(t, "verify file runners/lib/extra.py changed")
	})
	t.Run("snapshot link re-pointed to a new blob of the same bytes and times", func(t *testing.T) {
		path := filepath.Join(modelDir, "tokenizer_config.json")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		putBlob(t, modelDir, "tokenizer_config.json", data, fi)
		refused(t, "model file tokenizer_config.json changed")
	})
	t.Run("weights rewritten in place", func(t *testing.T) {
		rewriteInPlace(t, filepath.Join(modelDir, "model.safetensors"), func(b []byte) []byte {
			b[len(b)-1] ^= 0x01
			return b
		})
		refused(t, "model file model.safetensors changed")
	})
	t.Run("config.json digits rewritten in place", func(t *testing.T) {
		rewriteInPlace(t, filepath.Join(modelDir, "config.json"), func(b []byte) []byte {
			return []byte(strings.Replace(string(b), "1e-05", "2e-05", 1))
		})
		refused(t, "model file config.json changed")
	})
}

// refusedFor runs only the reuse stage of run on modelDir (then stops, as an
// interrupt does) and fails unless the recorded PASS was refused for a reason
// naming each of want.
func refusedFor(t *testing.T, s *Settings, modelDir string, want ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := s.Progress
	s.Progress = &cancelOn{stage: "reuse", cancel: cancel}
	r := RunBF16(ctx, s, modelDir, "test")
	s.Progress = progress
	if r.ReusedFrom != nil {
		t.Fatalf("a stale PASS was reused (want it refused: %q)", want)
	}
	got := stageDetail(r, "reuse")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("reuse stage %q, want it to name %q", got, w)
		}
	}
}
