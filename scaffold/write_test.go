package scaffold

import (
	"encoding/json"
	"errors"
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
	res, err := Write(ws, files, false)
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
	res, err := Generate(t.TempDir(), loadSpec(t, "qwen3"), false)
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
	if _, err := Write(ws, files, false); err != nil {
		t.Fatal(err)
	}

	res, err := Write(ws, files, false)
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
	res, err = Write(ws, newer, false)
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

func TestWriteRefusesUserEdits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, ws string)
		want  string
	}{
		{"edited after phase0 wrote it", func(t *testing.T, ws string) {
			writeWS(t, ws, "tiny_qwen3_weights.py", "# mine now\n")
		}, "tiny_qwen3_weights.py (changed since phase0 wrote it)"},
		{"manifest lost", func(t *testing.T, ws string) {
			writeWS(t, ws, "tiny_qwen3_cpu_helpers.py", "# hand-written helpers\n")
			if err := os.Remove(filepath.Join(ws, ManifestName)); err != nil {
				t.Fatal(err)
			}
		}, "tiny_qwen3_cpu_helpers.py (not written by phase0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if _, err := Write(ws, renderTiny(t), false); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, ws)
			// A newer rendering that would rewrite the other generated file
			// and create a new one: nothing at all may be written.
			spec := loadSpec(t, "qwen3")
			spec.RMSNormEps = 1e-5
			newer, err := Render(spec)
			if err != nil {
				t.Fatal(err)
			}
			newer = append(newer, File{Path: "extra.txt", Data: []byte("new\n")})
			before := snapshot(t, ws)

			_, err = Write(ws, newer, false)
			if !errors.Is(err, ErrUserEdited) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Write error = %v, want ErrUserEdited naming %q", err, tc.want)
			}
			if after := snapshot(t, ws); !mapsEqual(before, after) {
				t.Fatalf("Write changed the workspace although it refused:\nbefore %v\nafter  %v", keys(before), keys(after))
			}

			res, err := Write(ws, newer, true)
			if err != nil {
				t.Fatalf("forced Write: %v", err)
			}
			if !slices.Contains(res.Written, "tiny_qwen3_weights.py") || !slices.Contains(res.Written, "extra.txt") {
				t.Errorf("forced Write result %+v", res)
			}
			// After a forced write the files are phase0's again.
			if _, err := Write(ws, newer, false); err != nil {
				t.Errorf("Write after force: %v", err)
			}
		})
	}
}

func TestWriteAdoptsIdenticalUnknownFile(t *testing.T) {
	ws := t.TempDir()
	files := renderTiny(t)
	writeWS(t, ws, files[0].Path, string(files[0].Data))
	res, err := Write(ws, files, false)
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
		_, err := Write(t.TempDir(), []File{{Path: p, Data: []byte("x")}}, true)
		if err == nil || !strings.Contains(err.Error(), "stay inside the workspace") {
			t.Errorf("Write(%q) error = %v, want a path error", p, err)
		}
	}
}

func TestWriteCorruptManifest(t *testing.T) {
	ws := t.TempDir()
	writeWS(t, ws, ManifestName, "{not json")
	_, err := Write(ws, renderTiny(t), false)
	if err == nil || !strings.Contains(err.Error(), ManifestName) {
		t.Fatalf("error = %v, want one naming the manifest", err)
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		out[p] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
