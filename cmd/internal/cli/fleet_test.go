package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"phase0/internal/testenv"
)

// junitCases reads a JUnit file's testcase names, and its failures and
// errors.
func junitCases(t *testing.T, path string) (names []string, failures, errors int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Error   *struct{} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			names = append(names, c.Name)
			if c.Failure != nil {
				failures++
			}
			if c.Error != nil {
				errors++
			}
		}
	}
	return names, failures, errors
}

// TestFleetShardsAndJUnit: a 30-line list (27 hub ids missing from an
// offline cache, a model that passes, one the gate rejects, a missing
// folder) in 4 shards: each shard's JUnit file is valid against the JUnit
// schema, and the 4 files' testcases are the list, each model once.
func TestFleetShardsAndJUnit(t *testing.T) {
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "1")
	good := writeModel(t, tinyLlama)
	moe := writeModel(t, strings.Replace(tinyLlama, `"vocab_size"`, `"num_local_experts": 8, "vocab_size"`, 1))
	var models []string
	for i := range 27 {
		models = append(models, fmt.Sprintf("org/model-%02d", i))
	}
	models = append(models, good, moe, "/no/such/model")
	dir := t.TempDir()
	list := filepath.Join(dir, "hf_models.txt")
	os.WriteFile(list, []byte("# 30 models\n"+strings.Join(models, "\n")+"\n"), 0o644)

	var all, files []string
	for i := 1; i <= 4; i++ {
		shard := fmt.Sprintf("%d/4", i)
		file := filepath.Join(dir, fmt.Sprintf("junit-%d.xml", i))
		code, stdout, stderr := run(t, "inspect", "@"+list, "--shard", shard, "--junit", file)
		if code != 2 && code != 1 && code != 0 {
			t.Fatalf("shard %s: exit %d\n%s\n%s", shard, code, stdout, stderr)
		}
		if !strings.HasPrefix(stdout, "shard "+shard+": ") || !strings.Contains(stdout, " of 30 models") {
			t.Errorf("shard %s: table does not name the shard:\n%s", shard, stdout)
		}
		names, _, _ := junitCases(t, file)
		all = append(all, names...)
		files = append(files, file)
	}
	slices.Sort(all)
	want := slices.Clone(models)
	slices.Sort(want)
	if !slices.Equal(all, want) {
		t.Errorf("the 4 shards' testcases are not the list, each once:\ngot  %v\nwant %v", all, want)
	}
	for i, complaint := range testenv.ValidateXML(t, testenv.JUnitXSD(), files...) {
		if complaint != "" {
			t.Errorf("%s is not valid JUnit: %s", files[i], complaint)
		}
	}

	// The whole list in one file: 1 PASS, 1 failure (REJECTED), 28 errors.
	whole := filepath.Join(dir, "junit.xml")
	code, stdout, _ := run(t, "inspect", "@"+list, "--junit", whole)
	names, failures, errors := junitCases(t, whole)
	if code != 2 || len(names) != 30 || failures != 1 || errors != 28 {
		t.Errorf("exit %d, %d testcases, %d failures, %d errors; want exit 2, 30, 1, 28", code, len(names), failures, errors)
	}
	if !strings.Contains(stdout, "27 models ERROR") {
		t.Errorf("the 27 missing hub ids are not said once:\n%s", stdout)
	}
}

// Bad --shard and --junit values are usage errors: exit 2, nothing run,
// no file written.
func TestFleetFlagRefusals(t *testing.T) {
	good := writeModel(t, tinyLlama)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", good, "--shard", "5/4"}, "--shard: shard \"5/4\": I is 5, want 1 to N (4)"},
		{[]string{"inspect", good, "--shard", "0x1/4"}, "base-10 integers"},
		{[]string{"run", good, "--shard", "1/0"}, "N is 0"},
		{[]string{"inspect", good, "--junit", filepath.Join(dir, "no", "such", "\x00", "j.xml")}, "--junit: cannot write"},
		{[]string{"inspect", good, "--junit", dir}, "--junit: cannot write"},
		{[]string{"inspect", good, "--junit="}, "--junit: an empty value"},
		{[]string{"inspect", good, "--shard="}, "--shard: an empty value"},
		{[]string{"inspect", good, "--shard", "01/4"}, "base-10 integers"},
	} {
		code, stdout, stderr := run(t, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 naming %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused invocations wrote %d entries", len(entries))
	}
	for _, c := range []string{"baseline", "reference", "preflight", "compare"} {
		if code, _, stderr := run(t, c, good, "--junit", filepath.Join(dir, "j.xml")); code != 2 || !strings.Contains(stderr, "unknown flag: --junit") {
			t.Errorf("%s --junit: exit %d, %q; want an unknown flag", c, code, stderr)
		}
	}
}

// `run @list --junit out.xml --shard 2/4` on a 30-line list writes a JUnit
// file the schema accepts, holding exactly shard 2's models.
func TestRunListShardJUnit(t *testing.T) {
	t.Setenv("PHASE0_PYTHON", testenv.Python(t))
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "1")
	moe := writeModel(t, strings.Replace(tinyLlama, `"vocab_size"`, `"num_local_experts": 8, "vocab_size"`, 1))
	var models []string
	for i := range 28 {
		models = append(models, fmt.Sprintf("org/model-%02d", i))
	}
	models = append(models, moe, "/no/such/model")
	dir := t.TempDir()
	list := filepath.Join(dir, "hf_models.txt")
	os.WriteFile(list, []byte(strings.Join(models, "\n")+"\n"), 0o644)
	file := filepath.Join(dir, "out.xml")
	code, stdout, stderr := run(t, "run", "@"+list, "--junit", file, "--shard", "2/4", "--out-dir", filepath.Join(dir, "ws"))
	if code != 2 && code != 1 && code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	names, _, _ := junitCases(t, file)
	var want []string
	for _, m := range models {
		h := fnv.New32a()
		h.Write([]byte(m))
		if h.Sum32()%4 == 1 {
			want = append(want, m)
		}
	}
	if !slices.Equal(names, want) || len(names) == 0 {
		t.Errorf("shard 2/4's testcases %v, want %v", names, want)
	}
	if c := testenv.ValidateXML(t, testenv.JUnitXSD(), file); c[0] != "" {
		b, _ := os.ReadFile(file)
		t.Errorf("not valid JUnit: %s\n%s", c[0], b)
	}
}

// `inspect @list` of a list holding the default model: the parallel
// inspect passes no progress writer, and the default model's "reused" line
// must not dereference it (it panicked). (`inspect default default` is now
// one entry: a model listed twice runs once.)
func TestInspectListOfTheDefaultModel(t *testing.T) {
	t.Setenv("PHASE0_PYTHON", testenv.Python(t))
	list := filepath.Join(t.TempDir(), "models.txt")
	os.WriteFile(list, []byte("default\n"), 0o644)
	code, stdout, stderr := run(t, "inspect", "@"+list, "default", "--json")
	var got struct {
		Status string `json:"status"`
		Models []struct {
			Status string `json:"status"`
		} `json:"models"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 || len(got.Models) != 1 || got.Models[0].Status != "PASS" || !strings.Contains(stderr, `"default" is listed again at argument 2`) {
		t.Errorf("exit %d, %v, %+v; want exit 0 and one PASS row, the repeat said\n%s", code, err, got, stderr)
	}
}

// --junit never destroys a file it did not write: the list itself, the
// model's config.json (exit 2, nothing run, the file as it was); an
// earlier JUnit report of phase0's is replaced.
func TestJUnitKeepsOtherFiles(t *testing.T) {
	good := writeModel(t, tinyLlama)
	dir := t.TempDir()
	list := filepath.Join(dir, "hf_models.txt")
	os.WriteFile(list, []byte(good+"\n"), 0o644)
	config := filepath.Join(good, "config.json")
	for _, target := range []string{list, config} {
		before, _ := os.ReadFile(target)
		code, stdout, stderr := run(t, "inspect", "@"+list, "--junit", target)
		after, _ := os.ReadFile(target)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "is not a JUnit report phase0 wrote") || string(after) != string(before) {
			t.Errorf("--junit %s: exit %d, %q; want exit 2 and the file as it was (now %q)", target, code, stderr, after)
		}
	}
	file := filepath.Join(dir, "out.xml")
	for i := range 2 {
		if code, _, stderr := run(t, "inspect", "@"+list, "--junit", file); code != 0 {
			t.Errorf("run %d: exit %d, %q", i+1, code, stderr)
		}
	}
	if names, _, _ := junitCases(t, file); len(names) != 1 {
		t.Errorf("the report phase0 wrote was not replaced: %v", names)
	}
}

// --junit refuses what it did not write and says what a path is in words
// (issue 36): an empty file, a file that merely begins like a report, the
// file stdout or stderr is redirected to (`--json > f --junit f` lost the
// JSON), /dev/stdout ("a symlink", not "L---------"), /dev/null ("a device").
func TestJUnitRefusesFilesNotItsOwn(t *testing.T) {
	good := writeModel(t, tinyLlama)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.xml")
	os.WriteFile(empty, nil, 0o644)
	begins := filepath.Join(dir, "begins.xml")
	os.WriteFile(begins, []byte(`<testsuites name="phase0">`+"\nmy notes\n"), 0o644)
	for _, tc := range []struct {
		path, want string
	}{
		{empty, "is empty, not a JUnit report phase0 wrote"},
		{begins, "is not a JUnit report phase0 wrote"},
		{"/dev/stdout", "cannot write /dev/stdout: it is a symlink, not a regular file"},
		{"/dev/null", "cannot write /dev/null: it is a device, not a regular file"},
	} {
		var before, after []byte
		if !strings.HasPrefix(tc.path, "/dev/") { // reading /dev/stdout would wait on the test's own stdout
			before, _ = os.ReadFile(tc.path)
		}
		code, _, stderr := run(t, "inspect", good, "--junit", tc.path)
		if !strings.HasPrefix(tc.path, "/dev/") {
			after, _ = os.ReadFile(tc.path)
		}
		if code != 2 || !strings.Contains(stderr, "--junit: ") || !strings.Contains(stderr, tc.want) || string(before) != string(after) {
			t.Errorf("--junit %s: exit %d, %q; want exit 2 saying %q, the file as it was", tc.path, code, stderr, tc.want)
		}
	}
	for _, stream := range []string{"stdout", "stderr"} {
		out := filepath.Join(dir, stream+".json")
		f, err := os.Create(out) // what `> out` does before phase0 starts
		if err != nil {
			t.Fatal(err)
		}
		var other bytes.Buffer
		stdout, stderr := io.Writer(f), io.Writer(&other)
		if stream == "stderr" {
			stdout, stderr = &other, f
		}
		code := Execute(t.Context(), []string{"inspect", good, "--json", "--junit", out}, stdout, stderr, Options{Version: "test"})
		f.Close()
		got, _ := os.ReadFile(out)
		msg := string(got) + other.String()
		if code != 2 || !strings.Contains(msg, "is the file phase0's "+stream+" goes to") || strings.Contains(string(got), "<testsuites") {
			t.Errorf("--junit at the %s file: exit %d, %q", stream, code, msg)
		}
	}
}

// A model listed twice is inspected once, with one JUnit case, and stderr
// says so (issue 36 item 12).
func TestListedTwiceRunsOnce(t *testing.T) {
	good := writeModel(t, tinyLlama)
	dir := t.TempDir()
	list := filepath.Join(dir, "hf_models.txt")
	os.WriteFile(list, []byte(good+"\n"+good+"\n"), 0o644)
	file := filepath.Join(dir, "j.xml")
	code, stdout, stderr := run(t, "inspect", "@"+list, "--junit", file)
	names, _, _ := junitCases(t, file)
	if code != 0 || len(names) != 1 || !strings.Contains(stderr, "is listed again at "+list+":2: it runs once") || !strings.Contains(stdout, "1 model(s)") {
		t.Errorf("exit %d, %d cases, stderr %q\n%s", code, len(names), stderr, stdout)
	}
}

// TestListOfMissingIdsIsQuietAndProbesOnce (issue 49 item 9): `run @list`
// of 300 ids missing from an offline cache starts the interpreter once,
// not once per row (counted by a wrapper that logs each start), and says
// each row in two short lines: at most 120 bytes and the list's path a row
// (it was ~700 and the path six times: seven lines each).
func TestListOfMissingIdsIsQuietAndProbesOnce(t *testing.T) {
	py := os.Getenv("PHASE0_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("needs PHASE0_PYTHON (make -s print-test-env)")
	}
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts.log")
	wrapper := filepath.Join(dir, "python")
	testenv.WriteFile(t, wrapper, fmt.Sprintf("#!/bin/sh\necho start >> %q\nexec %q \"$@\"\n", starts, py))
	if err := os.Chmod(wrapper, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PHASE0_PYTHON", wrapper)
	t.Setenv("HF_HOME", t.TempDir())
	t.Setenv("HF_HUB_OFFLINE", "1")
	const n = 300
	var ids []string
	for i := range n {
		ids = append(ids, fmt.Sprintf("noorg/missing-%03d", i))
	}
	list := filepath.Join(dir, "l.txt")
	testenv.WriteFile(t, list, strings.Join(ids, "\n")+"\n")
	code, stdout, stderr := run(t, "run", "@"+list, "--out-dir", filepath.Join(dir, "ws"))
	if code != 2 || !strings.Contains(stdout, fmt.Sprintf("%d model(s)", n)) {
		t.Fatalf("exit %d, want 2 and a table of %d rows:\n%s", code, n, stdout)
	}
	b, err := os.ReadFile(starts)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "start"); got != 1 {
		t.Errorf("the interpreter started %d times for %d rows, want once", got, n)
	}
	if most := n * (120 + len(list)); len(stderr) > most || !strings.Contains(stderr, "noorg/missing-299 ("+list+":300)\nphase0: [300/300] noorg/missing-299: ERROR in ") {
		t.Errorf("stderr is %d bytes for %d rows (at most %d), or lacks the last row's line:\n%.2000s", len(stderr), n, most, stderr)
	}
}
