package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// OfflineHub lays out a HuggingFace hub cache as huggingface_hub writes it
// (blobs by content hash, snapshots/<commit>/ of relative links into blobs,
// refs/main), holding each tiny model folder under a hub id, and returns an
// environment that reads it offline.
func OfflineHub(t testing.TB, models map[string]string) func(string) string {
	t.Helper()
	cache := t.TempDir()
	for id, dir := range models {
		repo := filepath.Join(cache, "models--"+strings.ReplaceAll(id, "/", "--"))
		commit := HubCommit(id)
		snap := filepath.Join(repo, "snapshots", commit)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			blob := hex.EncodeToString(sum[:])
			WriteFile(t, filepath.Join(repo, "blobs", blob), string(b))
			if err := os.MkdirAll(snap, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join("..", "..", "blobs", blob), filepath.Join(snap, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		WriteFile(t, filepath.Join(repo, "refs", "main"), commit)
	}
	env := map[string]string{"HF_HUB_CACHE": cache, "HF_HOME": t.TempDir(), "HF_HUB_OFFLINE": "1"}
	return func(k string) string { return env[k] }
}

// SnapshotTree maps every file under dir to its bytes.
func SnapshotTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// SameTreeAs fails unless the tree at dir is byte for byte as snapshotted
// in before, with no file added.
func SameTreeAs(t testing.TB, dir string, before map[string]string) {
	t.Helper()
	after := SnapshotTree(t, dir)
	UnchangedExcept(t, before, after)
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("new file in the tree: %s", p)
		}
	}
}

// UnchangedExcept fails for any file of before that changed or vanished,
// outside the folders phase0 may write into.
func UnchangedExcept(t testing.TB, before, after map[string]string, writable ...string) {
	t.Helper()
	for p, b := range before {
		if slices.ContainsFunc(writable, func(w string) bool { return strings.HasPrefix(p, w) }) {
			continue
		}
		if a, ok := after[p]; !ok || a != b {
			t.Errorf("%s changed (present %v)", p, ok)
		}
	}
}
