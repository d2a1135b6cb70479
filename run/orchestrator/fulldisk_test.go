package orchestrator

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/gate/verdict"
	"phase0/internal/testenv"
	"phase0/output/report"
	"phase0/run/reuse"
)

// recordFiles maps the files of a workspace's record (reports, documents,
// manifest, inputs.json) to their bytes; a missing one maps to "".
func recordFiles(t *testing.T, ws string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, rel := range []string{"docs/development_progress/phase0/report.json", "docs/development_progress/phase0/report.md",
		"docs/development_progress/phase0/top10.png", "docs/development_progress/phase0/inputs.json", "TODO.md",
		"docs/development_progress/progress.md", "docs/development_progress/phase_timing.md", ".phase0-manifest.json"} {
		b, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(rel)))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out[rel] = string(b)
	}
	return out
}

// temporaries lists atomicfile's temporary files (and staged folders) left under dir.
func temporaries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestFullDiskKeepsTheRecordWhole: on a real 4 MiB tmpfs filled to one free
// level after another, `run --fresh` either records a complete PASS (exit
// 0) or exits 2 with the previous record byte for byte as it was, or with
// report.json marked ERROR — never a PASS report.json beside an exit 2, and
// never a report.json that inputs.json does not name.
func TestFullDiskKeepsTheRecordWhole(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	out := testenv.Tmpfs(t, 4<<20)
	s := settingsFor(t, out)
	s.Name, s.ReferenceSteps = "full", 0
	model := tiny(t, "qwen3")
	ws := filepath.Join(out, "full")
	mustPass(t, RunBF16(context.Background(), s, model, "test"))
	before := recordFiles(t, ws)
	for rel, b := range before {
		t.Logf("%s: %d bytes", rel, len(b))
	}
	s.Fresh = true
	exits := map[int]int{}
	for _, free := range []int64{0, 8 << 10, 24 << 10, 48 << 10, 96 << 10, 256 << 10, 1 << 20} {
		testenv.FillTo(t, out, free)
		r := RunBF16(context.Background(), s, model, "test")
		code := ExitCode(r)
		exits[code]++
		after := recordFiles(t, ws)
		var onDisk report.Report
		if err := json.Unmarshal([]byte(after["docs/development_progress/phase0/report.json"]), &onDisk); err != nil {
			t.Fatalf("%d KiB free: report.json: %v", free>>10, err)
		}
		switch {
		case code == 0:
			var in reuse.Record
			if err := json.Unmarshal([]byte(after["docs/development_progress/phase0/inputs.json"]), &in); err != nil ||
				in.ReportSHA256 != reuse.SHA256Hex([]byte(after["docs/development_progress/phase0/report.json"])) || onDisk.Status != verdict.Pass {
				t.Errorf("%d KiB free: exit 0 but the record is not a whole PASS (report %s, inputs.json %v)", free>>10, onDisk.Status, err)
			}
			before = after
		case code != 2:
			t.Errorf("%d KiB free: exit %d (%s: %s), want 0 or 2", free>>10, code, r.Status, r.Error)
		case onDisk.Status == verdict.Error:
			if after["docs/development_progress/phase0/inputs.json"] != "" {
				t.Errorf("%d KiB free: an ERROR report.json beside an inputs.json", free>>10)
			}
		default:
			for rel, b := range before {
				if after[rel] != b {
					t.Errorf("%d KiB free: exit 2 (%s) and %s changed: the previous record is not whole", free>>10, r.Error, rel)
				}
			}
		}
		if tmp := temporaries(t, out); len(tmp) > 0 {
			t.Errorf("%d KiB free: temporaries left: %v", free>>10, tmp)
		}
		t.Logf("%d KiB free: exit %d %s", free>>10, code, headLine(r.Error))
	}
	if exits[2] == 0 || exits[0] == 0 {
		t.Errorf("exits %v: the levels no longer span a refused record and a complete one", exits)
	}
}

// entries lists what dir holds, but the test's filler.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list {
		if e.Name() != ".test-filler" {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestNoHalfWrittenWorkspace: a run that creates its workspace (--out-dir)
// and cannot be evaluated leaves nothing: a name too long for the
// filesystem is refused before anything is created, and on a real tmpfs
// filled to each of several levels an exit 2 leaves no lock, no partial
// workspace, no temporary; a level with room for it all records a PASS.
func TestNoHalfWrittenWorkspace(t *testing.T) {
	t.Parallel() // independent of the other tests; overlaps their waits (make test runs -parallel 3)
	model := tiny(t, "qwen3")

	t.Run("a 240-character name", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "out")
		s := settingsFor(t, out)
		s.OutDir, s.LLMSDir = out, ""
		s.Name, s.ReferenceSteps = strings.Repeat("n", 240), 0
		r := RunBF16(context.Background(), s, model, "test")
		if ExitCode(r) != 2 || !strings.Contains(r.Error, "shorter --name") {
			t.Fatalf("exit %d, error %q; want 2 asking for a shorter --name", ExitCode(r), r.Error)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("--out-dir %s was created (%v): %v", out, err, entries(t, out))
		}
	})

	t.Run("a full disk", func(t *testing.T) {
		out := testenv.Tmpfs(t, 2<<20)
		s := settingsFor(t, out)
		s.Name, s.ReferenceSteps = "new", 0
		exits := map[int]int{}
		for _, free := range []int64{0, 24 << 10, 48 << 10, 96 << 10, 192 << 10, 512 << 10, 1536 << 10} {
			testenv.FillTo(t, out, free)
			r := RunBF16(context.Background(), s, model, "test")
			code := ExitCode(r)
			exits[code]++
			t.Logf("%d KiB free: exit %d %s", free>>10, code, headLine(r.Error))
			switch code {
			case 2:
				if left := entries(t, out); len(left) > 0 {
					t.Errorf("%d KiB free: exit 2 (%s) left %v", free>>10, headLine(r.Error), left)
				}
			case 0:
				if _, err := os.Stat(filepath.Join(out, "new", "docs", "development_progress", "phase0", "report.json")); err != nil {
					t.Errorf("%d KiB free: exit 0 without report.json: %v", free>>10, err)
				}
				if tmp := temporaries(t, out); len(tmp) > 0 {
					t.Errorf("%d KiB free: temporaries left: %v", free>>10, tmp)
				}
				os.RemoveAll(filepath.Join(out, "new"))
			default:
				t.Errorf("%d KiB free: exit %d (%s: %s), want 0 or 2", free>>10, code, r.Status, r.Error)
			}
		}
		if exits[2] < 4 || exits[0] == 0 {
			t.Errorf("exits %v: the levels no longer span refused workspaces and a complete one", exits)
		}
	})
}

// headLine is the first line of s, for the tests' logs.
func headLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
