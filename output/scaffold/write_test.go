package scaffold

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func renderTiny(t *testing.T) []File {
	t.Helper()
	files, err := Render(loadSpec(t, "qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func readWS(t *testing.T, ws, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func writeWS(t *testing.T, ws, rel, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(ws, filepath.FromSlash(rel)), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func paths(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

func TestWriteFreshWorkspace(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "llms", "tiny_qwen3")
	files := renderTiny(t)
	res, err := Write(ws, files)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Written, paths(files)) || len(res.Unchanged)+len(res.Kept) != 0 {
		t.Fatalf("result = %+v, want every file written", res)
	}
	for _, f := range files {
		if got := readWS(t, ws, f.Path); got != string(f.Data) {
			t.Errorf("%s on disk differs from the rendered content", f.Path)
		}
	}
	var m manifest
	if err := json.Unmarshal([]byte(readWS(t, ws, ManifestName)), &m); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if m.Files[f.Path] != sha256Hex(f.Data) {
			t.Errorf("manifest[%s] = %q, want the sha256 of the written data", f.Path, m.Files[f.Path])
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(ws, ".*.tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
}

func TestGenerateReportsHelpers(t *testing.T) {
	res, err := generate(t.TempDir(), loadSpec(t, "qwen3"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"rms_norm", "qk_norm_per_head", "softmax", "attention_reference"}; !slices.Equal(res.HelpersKept, want) {
		t.Errorf("HelpersKept = %v, want %v", res.HelpersKept, want)
	}
}

// Re-runs: identical files are Unchanged, files untouched since phase0 wrote
// them are replaced by a new rendering, documents are Kept.
func TestWriteRerun(t *testing.T) {
	ws := t.TempDir()
	files := renderTiny(t)
	if _, err := Write(ws, files); err != nil {
		t.Fatal(err)
	}

	res, err := Write(ws, files)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written) != 0 || !slices.Equal(res.Unchanged, paths(files)) {
		t.Fatalf("identical re-run: %+v, want everything Unchanged", res)
	}

	spec := loadSpec(t, "qwen3")
	spec.RMSNormEps = 1e-5
	newer, err := Render(spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err = Write(ws, newer)
	if err != nil {
		t.Fatal(err)
	}
	wantWritten := []string{"tiny_qwen3_weights.py", "tiny_qwen3_cpu_helpers.py"}
	if !slices.Equal(res.Written, wantWritten) || !slices.Equal(res.Kept, []string{"TODO.md"}) {
		t.Fatalf("changed spec: %+v, want %v written and TODO.md kept", res, wantWritten)
	}
	if !strings.Contains(readWS(t, ws, "tiny_qwen3_cpu_helpers.py"), "RMS_NORM_EPS = 1e-05") {
		t.Error("helpers were not regenerated with the new eps")
	}
	if !strings.Contains(readWS(t, ws, "TODO.md"), "rms_norm_eps=1e-06") {
		t.Error("TODO.md was replaced; documents must be kept once they exist")
	}
}

// Foreign files — edited since phase0 wrote them, or never written by it —
// are never replaced; the rest of the rendering is still written.
func TestWriteNeverReplacesForeignFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, ws string)
		foreign []string
		rel     string
	}{
		{"edited after phase0 wrote it", func(t *testing.T, ws string) {
			writeWS(t, ws, "tiny_qwen3_weights.py", "# mine now\n")
		}, []string{"tiny_qwen3_weights.py (changed since phase0 wrote it)"}, "tiny_qwen3_weights.py"},
		{"manifest lost", func(t *testing.T, ws string) {
			writeWS(t, ws, "tiny_qwen3_cpu_helpers.py", "# hand-written helpers\n")
			if err := os.Remove(filepath.Join(ws, ManifestName)); err != nil {
				t.Fatal(err)
			}
			// Without the manifest phase0's own older weights module is no
			// longer provably its own either.
		}, []string{"tiny_qwen3_weights.py (not written by phase0)", "tiny_qwen3_cpu_helpers.py (not written by phase0)"}, "tiny_qwen3_cpu_helpers.py"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if _, err := Write(ws, renderTiny(t)); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, ws)
			before := readWS(t, ws, tc.rel)
			spec := loadSpec(t, "qwen3")
			spec.RMSNormEps = 1e-5
			newer, err := Render(spec)
			if err != nil {
				t.Fatal(err)
			}
			newer = append(newer, File{Path: "extra.txt", Data: []byte("new\n")})
			for range 2 { // the second Write must not have adopted the foreign file
				res, err := Write(ws, newer)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(res.Foreign, tc.foreign) {
					t.Fatalf("Foreign = %v, want %v", res.Foreign, tc.foreign)
				}
				if got := readWS(t, ws, tc.rel); got != before {
					t.Fatalf("%s was replaced: %q", tc.rel, got)
				}
				if readWS(t, ws, "extra.txt") != "new\n" {
					t.Error("the rest of the rendering was not written")
				}
				if own, err := Owner(ws, tc.rel); err != nil || own != Foreign {
					t.Errorf("Owner(%s) = %v, %v; want Foreign", tc.rel, own, err)
				}
			}
		})
	}
}

func TestWriteAdoptsIdenticalUnknownFile(t *testing.T) {
	ws := t.TempDir()
	files := renderTiny(t)
	writeWS(t, ws, files[0].Path, string(files[0].Data))
	res, err := Write(ws, files)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Unchanged, []string{files[0].Path}) {
		t.Fatalf("Unchanged = %v, want [%s]", res.Unchanged, files[0].Path)
	}
	m, err := readManifest(ws)
	if err != nil {
		t.Fatal(err)
	}
	if m.Files[files[0].Path] != sha256Hex(files[0].Data) {
		t.Error("an identical pre-existing file was not recorded in the manifest")
	}
}

func TestWriteRejectsBadPaths(t *testing.T) {
	for _, p := range []string{"../escape.py", "/abs.py", "a/../../b.py", "", ".", ManifestName} {
		_, err := Write(t.TempDir(), []File{{Path: p, Data: []byte("x")}})
		if err == nil || !strings.Contains(err.Error(), "stay inside the workspace") {
			t.Errorf("Write(%q) error = %v, want a path error", p, err)
		}
	}
}

func TestWriteCorruptManifest(t *testing.T) {
	ws := t.TempDir()
	writeWS(t, ws, ManifestName, "{not json")
	_, err := Write(ws, renderTiny(t))
	if err == nil || !strings.Contains(err.Error(), ManifestName) {
		t.Fatalf("error = %v, want one naming the manifest", err)
	}
}
