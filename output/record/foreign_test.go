package record

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/output/report"
)

// TestForeignRecordFilesAreKept: a record folder (a --report-dir of a
// person's) holding a file of a record's name that phase0 did not write —
// a chart, inputs.json, report.json or report.md, an empty one too — is
// refused before anything is written, in the swapped folder and in the
// file-by-file mode (a folder holding a folder), and the file stays as it
// was; the record phase0 wrote there is written again, a chart from before
// charts carried report.ChartMark with it.
func TestForeignRecordFilesAreKept(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n a person's own picture"
	names := append(report.FileNames(), "inputs.json")
	for _, mode := range []string{"swapped", "file by file"} {
		for _, name := range names {
			for _, content := range []string{png, `{"my": "notes"}` + "\n", ""} {
				f := killFixture(t.TempDir())
				if err := os.MkdirAll(f.dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if mode == "file by file" {
					if err := os.Mkdir(filepath.Join(f.dir, "notes"), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				path := filepath.Join(f.dir, name)
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				err := Commit(f.report(true), f.dir, f.docs(true), f.inputs, f.encode(true))
				got, _ := os.ReadFile(path)
				if !errors.Is(err, ErrRecord) || err == nil || !strings.Contains(err.Error(), path+" exists and phase0 did not write it") || string(got) != content {
					t.Errorf("%s, %s holding %q: %v, kept %v; want refused naming it, kept", mode, name, content, err, string(got) == content)
				}
				if _, err := os.Stat(filepath.Join(f.ws, "TODO.md")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s, %s: TODO.md was written (%v)", mode, name, err)
				}
			}
		}
	}

	f := killFixture(t.TempDir())
	if err := Commit(f.report(true), f.dir, f.docs(true), f.inputs, f.encode(true)); err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(f.dir, "top10.png")
	old, err := os.ReadFile(chart)
	if err != nil || !strings.Contains(string(old[:64]), report.ChartMark) {
		t.Fatalf("phase0's chart %v lacks its mark", err)
	}
	// A chart from before the mark, beside phase0's report.json.
	unmarked := strings.Replace(string(old), report.ChartMark, "tEXtSoftware\x00gonum!", 1)
	if err := os.WriteFile(chart, []byte(unmarked), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Commit(f.report(true), f.dir, f.docs(true), f.inputs, f.encode(true)); err != nil || f.generation(t) != "old" {
		t.Errorf("phase0's own record written again: %v, record %q", err, f.generation(t))
	}
}
