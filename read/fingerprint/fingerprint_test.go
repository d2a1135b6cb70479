package fingerprint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phase0/internal/testenv"
	"phase0/wire"
)

// TestCTimeSeesAnInPlaceRewrite: a file too large to hash, rewritten through
// its own inode with its size and mtime put back, is still a change.
func TestCTimeSeesAnInPlaceRewrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.safetensors")
	testenv.WriteFile(t, path, "0123456789")
	before := Stat(path, "model.safetensors", 4) // larger than 4 bytes: metadata only
	if before.SHA256 != "" || before.CTime == 0 || before.Inode == 0 {
		t.Fatalf("stamp %+v", before)
	}
	fi, _ := os.Stat(path)
	time.Sleep(20 * time.Millisecond) // past the kernel's coarse clock tick
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("9"), 0)
	f.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	after := Stat(path, "model.safetensors", 4)
	if after.Size != before.Size || after.MTime != before.MTime {
		t.Fatalf("size or mtime moved: %+v → %+v", before, after)
	}
	got := Change("model file", []File{before}, []File{after})
	if !strings.Contains(got, "model file model.safetensors changed") || !strings.Contains(got, "ctime") {
		t.Errorf("change %q", got)
	}
}

func TestChangeNamesWhatMoved(t *testing.T) {
	a := File{Name: "a", Size: 1, SHA256: "x"}
	for _, tc := range []struct {
		name     string
		old, cur []File
		want     string
	}{
		{"equal", []File{a}, []File{a}, ""},
		{"new", nil, []File{a}, "f a is new"},
		{"removed", []File{a}, nil, "f a was removed"},
		{"absent now", []File{a}, []File{{Name: "a", Absent: true}}, "f a was removed"},
		{"content", []File{a}, []File{{Name: "a", Size: 1, SHA256: "y"}}, "f a changed (content)"},
		{"blob", []File{{Name: "a", Blob: "b1"}}, []File{{Name: "a", Blob: "b2"}}, "links to blob b2, was b1"},
		{"inode", []File{{Name: "a", Inode: 1}}, []File{{Name: "a", Inode: 2}}, "another file at that path"},
		{"unstampable", []File{a}, []File{{Name: "a", Err: "permission denied"}}, "could not be stamped (permission denied)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Change("f", tc.old, tc.cur)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Change = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTreeSkipsCachesAndFollowsBlobs: __pycache__ and .git are not inputs;
// a link into an HF cache's blobs/ carries the blob's name.
func TestTreeSkipsCachesAndFollowsBlobs(t *testing.T) {
	root := t.TempDir()
	snap := filepath.Join(root, "snapshots", "rev")
	testenv.WriteFile(t, filepath.Join(root, "blobs", "abc123"), "{}")
	testenv.WriteFile(t, filepath.Join(snap, "__pycache__", "x.pyc"), "cache")
	testenv.WriteFile(t, filepath.Join(snap, ".git", "HEAD"), "ref")
	testenv.WriteFile(t, filepath.Join(snap, "sub", "extra.py"), "x = 1\n")
	if err := os.Symlink("../../blobs/abc123", filepath.Join(snap, "config.json")); err != nil {
		t.Fatal(err)
	}
	files, err := Tree(snap, TreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "config.json,sub/extra.py" {
		t.Fatalf("names %v", names)
	}
	if files[0].Blob != "abc123" || files[0].SHA256 == "" || files[0].Size != 2 {
		t.Errorf("config.json stamp %+v", files[0])
	}
	if _, err := Tree(filepath.Join(root, "missing"), TreeOptions{}); !os.IsNotExist(err) {
		t.Errorf("missing root: %v", err)
	}
}

// TestSourcesSeeShadowingAndSkipStdlib: stdlib files are not stamped (the
// interpreter stamp covers them) but site-packages under a system prefix
// are; a new sitecustomize.py changes the site folder's listing, a data
// folder does not.
func TestSourcesSeeShadowingAndSkipStdlib(t *testing.T) {
	root := t.TempDir()
	stdlib := filepath.Join(root, "lib", "python3.12")
	site := filepath.Join(stdlib, "site-packages")
	user := filepath.Join(root, "tree")
	testenv.WriteFile(t, filepath.Join(stdlib, "os.py"), "")
	testenv.WriteFile(t, filepath.Join(site, "numpy", "__init__.py"), "")
	testenv.WriteFile(t, filepath.Join(site, "x.pth"), "import y\n")
	testenv.WriteFile(t, filepath.Join(user, "mylib.py"), "A = 1\n")
	im := wire.Imports{
		Modules: []wire.ImportedModule{
			{Name: "os", File: filepath.Join(stdlib, "os.py")},
			{Name: "numpy", File: filepath.Join(site, "numpy", "__init__.py"), Search: []string{filepath.Join(site, "numpy")}},
			{Name: "mylib", File: filepath.Join(user, "mylib.py")},
			{Name: "relative", File: "relative.py"},
		},
		SysPath:  []string{"", user, stdlib, site},
		Stdlib:   []string{stdlib},
		SiteDirs: []string{site},
	}
	s := StampSources(im)
	var names []string
	for _, f := range s.Files {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != filepath.Join(site, "numpy", "__init__.py")+","+filepath.Join(user, "mylib.py") {
		t.Fatalf("stamped %v", names)
	}
	if s.Files[0].SHA256 != "" || s.Files[1].SHA256 == "" {
		t.Errorf("installed packages by metadata, the user's code by content: %+v", s.Files)
	}
	if len(s.Pth) != 1 || len(s.Listings) != 3 {
		t.Errorf("pth %v, listings %v", s.Pth, s.Listings)
	}
	if why := SourcesChange(s, s.Restamp()); why != "" {
		t.Fatalf("unchanged: %q", why)
	}
	if err := os.MkdirAll(filepath.Join(user, "some_model_folder"), 0o755); err != nil {
		t.Fatal(err)
	}
	if why := SourcesChange(s, s.Restamp()); why != "" {
		t.Errorf("a data folder in the tree: %q", why)
	}
	testenv.WriteFile(t, filepath.Join(site, "sitecustomize.py"), "import numpy\n")
	if why := SourcesChange(s, s.Restamp()); !strings.Contains(why, "import folder "+site+" changed") {
		t.Errorf("sitecustomize: %q", why)
	}
	os.Remove(filepath.Join(site, "sitecustomize.py"))
	t.Setenv("PYTHONPATH", "/elsewhere")
	if why := SourcesChange(s, s.Restamp()); !strings.Contains(why, "environment variable PYTHONPATH") {
		t.Errorf("PYTHONPATH: %q", why)
	}
}
