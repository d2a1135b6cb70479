package reference

import (
	"os"
	"path/filepath"
	"phase0/read/fingerprint"
	"strings"
	"testing"
)

// TestModelFilesSHA256FollowsBytes: the key's model fingerprint is the
// one verdict reuse compares (fingerprint.Tree over the whole folder), so a
// file swapped in with the old size and mtime, or any new file, changes it.
func TestModelFilesSHA256FollowsBytes(t *testing.T) {
	dir := t.TempDir()
	st := filepath.Join(dir, "model.safetensors")
	os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644)
	os.WriteFile(st, []byte("12345678"), 0o644)
	a, err := ModelFilesSHA256(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := ModelFilesSHA256(dir); b != a {
		t.Fatal("an unchanged folder changed its fingerprint")
	}
	files, err := fingerprint.Tree(dir, fingerprint.TreeOptions{})
	if err != nil || fingerprint.Digest(files) != a {
		t.Errorf("the key's fingerprint is not fingerprint.Tree's digest (%v)", err)
	}
	// A folder reached through a symlink is that folder (issue 36 item 2:
	// the walk saw the link alone and said "holds no config.json").
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if l, err := ModelFilesSHA256(link); err != nil || l != a {
		t.Errorf("through a symlink: %.12s, %v; want %.12s", l, err, a)
	}
	fi, _ := os.Stat(st)
	tmp := filepath.Join(t.TempDir(), "new")
	os.WriteFile(tmp, []byte("87654321"), 0o644)
	os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
	if err := os.Rename(tmp, st); err != nil {
		t.Fatal(err)
	}
	b, _ := ModelFilesSHA256(dir)
	if b == a {
		t.Error("a safetensors file swapped in with the same size and mtime kept the fingerprint")
	}
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("a model card"), 0o644)
	if c, _ := ModelFilesSHA256(dir); c == b {
		t.Error("a new file in the model folder kept the fingerprint")
	}
	if _, err := ModelFilesSHA256(t.TempDir()); err == nil {
		t.Error("an empty folder has a fingerprint")
	}
}

func TestKeyDiffNamesWhatChanged(t *testing.T) {
	a := Key{Format: Format, ModelFilesSHA256: "aaaa", TokenizerSHA256: "t", Prompts: []string{"x"}, Dtype: "bfloat16", DecodeSteps: 32, TopK: 5, TorchVersion: "2.1"}
	b := a
	b.ModelFilesSHA256, b.TorchVersion = "bbbb", "2.2"
	if a.SHA256() == b.SHA256() {
		t.Fatal("different keys, same digest")
	}
	diff := strings.Join(a.Diff(b), "; ")
	if !strings.Contains(diff, "model files aaaa → bbbb") || !strings.Contains(diff, "torch/transformers 2.1/ → 2.2/") || strings.Contains(diff, "prompts") {
		t.Errorf("diff %q", diff)
	}
}
