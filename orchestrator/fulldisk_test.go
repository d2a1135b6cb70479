package orchestrator

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"phase0/internal/testenv"
	"phase0/report"
	"phase0/verdict"
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
	mustPass(t, Run(context.Background(), s, model, "test"))
	before := recordFiles(t, ws)
	for rel, b := range before {
		t.Logf("%s: %d bytes", rel, len(b))
	}
	s.Fresh = true
	exits := map[int]int{}
	for _, free := range []int64{0, 8 << 10, 24 << 10, 48 << 10, 96 << 10, 256 << 10, 1 << 20} {
		testenv.FillTo(t, out, free)
		r := Run(context.Background(), s, model, "test")
		code := ExitCode(r)
		exits[code]++
		after := recordFiles(t, ws)
		var onDisk report.Report
		if err := json.Unmarshal([]byte(after["docs/development_progress/phase0/report.json"]), &onDisk); err != nil {
			t.Fatalf("%d KiB free: report.json: %v", free>>10, err)
		}
		switch {
		case code == 0:
			var in inputsRecord
			if err := json.Unmarshal([]byte(after["docs/development_progress/phase0/inputs.json"]), &in); err != nil ||
				in.ReportSHA256 != sha256Hex([]byte(after["docs/development_progress/phase0/report.json"])) || onDisk.Status != verdict.Pass {
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
		t.Logf("%d KiB free: exit %d %s", free>>10, code, firstLine(r.Error))
	}
	if exits[2] == 0 || exits[0] == 0 {
		t.Errorf("exits %v: the levels no longer span a refused record and a complete one", exits)
	}
}
