package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"phase0/gate/baseline"
	"phase0/gate/quant"
	"phase0/gate/verdict"
	"phase0/output/report"
	"phase0/wire"
)

// A child copy of this test binary commits the "new" record of killFixture
// and kills itself with SIGKILL at the point RECORD_KILL_AT names
// ("<point>:<n>", the n-th time the commit reaches it).
func TestMain(m *testing.M) {
	if at := os.Getenv("RECORD_KILL_AT"); at != "" {
		point, nth, _ := strings.Cut(at, ":")
		seen := 0
		stopAt = func(p string) {
			if p == point {
				if seen++; fmt.Sprint(seen) == nth {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					time.Sleep(time.Minute)
				}
			}
		}
		f := killFixture(os.Getenv("RECORD_WS"))
		err := Commit(f.report(false), f.dir, f.docs(false), f.inputs, f.encode(false))
		fmt.Println("committed:", err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fixture is a workspace with a record folder (docs/…/phase0) holding a
// person's file besides the record, and two documents the
// record updates.
type fixture struct{ ws, dir, inputs string }

func killFixture(ws string) fixture {
	dir := filepath.Join(ws, "docs", "development_progress", "phase0")
	return fixture{ws: ws, dir: dir, inputs: filepath.Join(dir, "inputs.json")}
}

// report is the old record (a PASS with a top-10 chart) or the new one (a
// gate 2 FAIL, no chart).
func (f fixture) report(old bool) *report.Report {
	b := baseline.NewBaseline()
	r := &report.Report{Tool: "phase0", Command: "run", Model: "m", Status: verdict.Fail, Gates: report.Gates{HFBaseline: b},
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Workspace: &report.Workspace{Dir: f.ws, Name: "m"}}
	b.Fail("the new run's gate 2 FAIL")
	if old {
		b = baseline.NewBaseline()
		b.Top10 = []baseline.Ranked{{ID: 1, Text: " Paris", Prob: 0.9}, {ID: 2, Text: " the", Prob: 0.05}}
		r.Status, r.Gates.HFBaseline = verdict.Pass, b
	}
	return r
}

func (f fixture) docs(old bool) []report.File {
	tag := map[bool]string{true: "old", false: "new"}[old]
	return []report.File{
		{Path: filepath.Join(f.ws, "TODO.md"), Data: []byte("# TODO (" + tag + ")\n")},
		{Path: filepath.Join(f.ws, "docs", "development_progress", "progress.md"), Data: []byte("progress (" + tag + ")\n")},
	}
}

func (f fixture) encode(old bool) func([]report.File) ([]byte, error) {
	if !old {
		return nil // a FAIL records no inputs.json
	}
	return func([]report.File) ([]byte, error) {
		return []byte("{\n  \"format\": 4,\n  \"report_sha256\": \"old\"\n}\n"), nil
	}
}

// generation says whether the folder holds the old record or the new one,
// wholly; "" for a mix.
func (f fixture) generation(t *testing.T) string {
	t.Helper()
	var match []string
	for _, old := range []bool{true, false} {
		files, err := report.Files(f.report(old), f.dir)
		if err != nil {
			t.Fatal(err)
		}
		same := true
		for _, file := range files {
			got, err := os.ReadFile(file.Path)
			same = same && err == nil && bytes.Equal(got, file.Data)
		}
		_, chart := os.Stat(filepath.Join(f.dir, "top10.png"))
		_, inputs := os.Stat(f.inputs)
		if same && (chart == nil) == old && (inputs == nil) == old {
			match = append(match, map[bool]string{true: "old", false: "new"}[old])
		}
	}
	if len(match) != 1 {
		return ""
	}
	return match[0]
}

// TestKillBetweenRenames: a SIGKILL at every point of the commit leaves
// the record folder wholly old or wholly new (never report.json of one run
// beside report.md of the other); the next run into the folder finishes
// the documents of a committed record, or keeps them old, and sweeps what
// the killed run left; a person's file stays.
func TestKillBetweenRenames(t *testing.T) {
	if swept, err := Recover(filepath.Join(t.TempDir(), "no", "record")); err != nil || len(swept) > 0 {
		t.Errorf("Recover of a record folder not made yet: %v, %v", swept, err)
	}
	for _, at := range []string{"linked:1", "staged:1", "exchanged:1", "renamed:1", "renamed:2", "journal removed:1", "committed:1"} {
		t.Run(at, func(t *testing.T) {
			f := killFixture(t.TempDir())
			if err := os.MkdirAll(f.dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for p, data := range map[string]string{"mine.txt": "a person's file"} {
				if err := os.WriteFile(filepath.Join(f.dir, p), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := Commit(f.report(true), f.dir, f.docs(true), f.inputs, f.encode(true)); err != nil {
				t.Fatal(err)
			}
			if g := f.generation(t); g != "old" {
				t.Fatalf("after the first commit: %q", g)
			}
			// A temporary an earlier killed run left in the folder.
			if err := os.WriteFile(filepath.Join(f.dir, ".report.md.tmp-123"), []byte("stray"), 0o644); err != nil {
				t.Fatal(err)
			}

			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "RECORD_KILL_AT="+at, "RECORD_WS="+f.ws)
			out, err := cmd.CombinedOutput()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the child was not killed at %s: %v\n%s", at, err, out)
			}
			gen := f.generation(t)
			if gen == "" {
				t.Fatalf("killed at %s: the record folder is a mix of the two runs", at)
			}
			t.Logf("killed at %s: the folder holds the %s record", at, gen)

			// The next run into the folder (its generate stage, or its record).
			swept, err := Recover(f.dir)
			if err != nil {
				t.Fatal(err)
			}
			if g := f.generation(t); g != gen {
				t.Errorf("after recovery the record is %q, was %q", g, gen)
			}
			for _, d := range f.docs(gen == "old") {
				if got, _ := os.ReadFile(d.Path); !bytes.Equal(got, d.Data) {
					t.Errorf("%s holds %q beside the %s record, want %q", d.Path, got, gen, d.Data)
				}
			}
			for p, data := range map[string]string{"mine.txt": "a person's file"} {
				if got, _ := os.ReadFile(filepath.Join(f.dir, p)); string(got) != data {
					t.Errorf("%s: %q, want %q", p, got, data)
				}
			}
			var left []string
			filepath.WalkDir(f.ws, func(p string, d os.DirEntry, err error) error {
				if err == nil && (strings.Contains(d.Name(), ".tmp-") || d.Name() == JournalName) {
					left = append(left, p)
				}
				return nil
			})
			if len(left) > 0 {
				t.Errorf("left behind after recovery: %v (swept %v)", left, swept)
			}
			// And a later commit stands whole.
			if err := Commit(f.report(false), f.dir, f.docs(false), f.inputs, nil); err != nil || f.generation(t) != "new" {
				t.Errorf("the next commit: %v, record %q", err, f.generation(t))
			}
		})
	}
}

// A record folder that holds a folder of a person's (a --report-dir such as
// their notes folder) is never swapped: the record is written file by file
// there, each file whole, the old inputs.json removed, and their folder and
// files stay where they are.
func TestCommitIntoASharedFolder(t *testing.T) {
	f := killFixture(t.TempDir())
	writeAll := func(files map[string]string) {
		for p, data := range files {
			path := filepath.Join(f.dir, p)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeAll(map[string]string{"notes/n.txt": "a person's note", "mine.txt": "a person's file"})
	before, err := os.Stat(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Commit(f.report(true), f.dir, f.docs(true), f.inputs, f.encode(true)); err != nil || f.generation(t) != "old" {
		t.Fatalf("first commit: %v, record %q", err, f.generation(t))
	}
	if err := Commit(f.report(false), f.dir, f.docs(false), f.inputs, nil); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(f.dir)
	if !os.SameFile(before, after) {
		t.Error("a folder holding a person's folder was swapped")
	}
	if _, err := os.Stat(f.inputs); err == nil {
		t.Error("the old inputs.json stands beside the new record")
	}
	for p, data := range map[string]string{"notes/n.txt": "a person's note", "mine.txt": "a person's file"} {
		if got, _ := os.ReadFile(filepath.Join(f.dir, p)); string(got) != data {
			t.Errorf("%s: %q, want %q", p, got, data)
		}
	}
	for _, d := range f.docs(false) {
		if got, _ := os.ReadFile(d.Path); !bytes.Equal(got, d.Data) {
			t.Errorf("%s: %q, want %q", d.Path, got, d.Data)
		}
	}
	got, _ := os.ReadFile(filepath.Join(f.dir, "report.json"))
	if files, _ := report.Files(f.report(false), f.dir); !bytes.Equal(got, files[len(files)-2].Data) {
		t.Error("report.json is not the new record's")
	}
	entries, _ := os.ReadDir(filepath.Dir(f.dir))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("left beside the record: %s", e.Name())
		}
	}
}

// TestEveryRenderedFileIsRecorded: each file report.Files renders into the
// record folder (report.json, report.md, both charts) is in the folder
// after Commit, byte for byte; none is taken for a workspace document and
// lost with the old folder (hidden_cosine.png once was).
func TestEveryRenderedFileIsRecorded(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "gate", "quant", "testdata", "twin", "nibbles.json"))
	if err != nil {
		t.Fatal(err)
	}
	var facts wire.QuantE2EFacts
	if err := json.Unmarshal(raw, &facts); err != nil {
		t.Fatal(err)
	}
	f := killFixture(t.TempDir())
	r := f.report(true)
	r.Gates.QuantE2E = quant.JudgeE2E(quant.Q4NX(), &facts, 2)
	files, err := report.Files(r, f.dir)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, file := range files {
		names[filepath.Base(file.Path)] = true
	}
	for _, want := range report.FileNames() {
		if !names[want] {
			t.Fatalf("the fixture's report renders no %s (%v): the test would not see it", want, names)
		}
	}
	// Twice: the second commit swaps a folder that holds the first record.
	for range 2 {
		if err := Commit(r, f.dir, f.docs(true), f.inputs, f.encode(true)); err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if got, err := os.ReadFile(file.Path); err != nil || !bytes.Equal(got, file.Data) {
				t.Errorf("%s after Commit: %v, %d bytes, want the rendered %d", filepath.Base(file.Path), err, len(got), len(file.Data))
			}
		}
	}
}
