package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// dumpsOf counts each test's settings, so that a test that builds several
// settings dumps each in a folder of its own, in the order it built them.
var (
	dumpsMu sync.Mutex
	dumpsOf = map[string]int{}
)

// FactsDumpEnv names a folder into which every end-to-end test writes what
// its runs said (the stage lines without their durations, and each
// report.json its runs recorded under the tree or the out folder), with the
// paths and clocks that differ between two runs of the same code masked.
// Two dumps, taken before and after a refactor, are compared with diff -r
// (docs/DEVELOPING.md, "Checking a refactor").
const FactsDumpEnv = "PHASE0_TEST_FACTS_DUMP"

// masks hide what two runs of the same code may differ in: durations and
// rates, clocks, temporary paths and the hashes of their names, free memory
// and disk, ports, pids, progress bars and heartbeats, the reference's key
// (it digests paths).
var masks = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`(?m)^(phase0: \S+\s+\S+)\s+[0-9.]+s`), "$1"},
	{regexp.MustCompile(`(?m)^phase0: \S+: .*\n`), ""},
	{regexp.MustCompile(`(?m)^.*(Fetching [0-9]+ files|Loading weights|\[transformers\]).*\n`), ""},
	{regexp.MustCompile(`/tmp/go-build[0-9]+`), "<gobuild>"},
	{regexp.MustCompile(`/tmp/[^\s"']*?/[0-9]{3,}`), "<tmp>"},
	{regexp.MustCompile(`-[0-9a-f]{12}/`), "-<hash>/"},
	{regexp.MustCompile(`/-[0-9a-f]{8}\b`), "/-<hash>"},
	{regexp.MustCompile(`\.tmp-[0-9]+`), ".tmp-<n>"},
	{regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9:]+)`), "<clock>"},
	{regexp.MustCompile(`"(seconds[a-z_]*|started|recorded|elapsed[a-z_]*|key_sha256)": [^,}\n]+`), `"$1": <t>`},
	{regexp.MustCompile(`"(mem_available|disk_free)[a-z_]*": [0-9]+`), `"$1": <n>`},
	{regexp.MustCompile(`[0-9.]+ MiB/s`), "<rate>"},
	{regexp.MustCompile(`[0-9]+(\.[0-9]+)?\s?(s|ms)\b`), "<t>"},
	{regexp.MustCompile(`[0-9]+(\.[0-9]+)? GiB`), "<GiB>"},
	{regexp.MustCompile(`127\.0\.0\.1:[0-9]+`), "127.0.0.1:<port>"},
	{regexp.MustCompile(`pid [0-9]+ \([^)]*\)`), "pid <pid>"},
}

// maskRun applies the masks.
func maskRun(s string) string {
	for _, m := range masks {
		s = m.re.ReplaceAllString(s, m.with)
	}
	return s
}

// DumpFacts, registered by the end-to-end kits' settings (run/orchestrator's
// settingsFor, run/quantkey/quanttest's Settings), writes the test's
// progress and the report.json files recorded under dirs (the tree, the out
// folder) into $PHASE0_TEST_FACTS_DUMP/<test>/ when it is set.
func DumpFacts(t *testing.T, progress func() string, dirs ...string) {
	root := os.Getenv(FactsDumpEnv)
	if root == "" {
		return
	}
	dumpsMu.Lock()
	dumpsOf[t.Name()]++
	n := dumpsOf[t.Name()]
	dumpsMu.Unlock()
	dir := filepath.Join(root, strings.ReplaceAll(t.Name(), "/", "__")+"."+strconv.Itoa(n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("facts dump: %v", err)
		return
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(maskRun(text)), 0o644); err != nil {
			t.Errorf("facts dump: %v", err)
		}
	}
	write("progress.txt", progress())
	for i, base := range dirs {
		if base == "" {
			continue
		}
		_ = filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "report.json" {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(base, path)
			write(strings.ReplaceAll(string(rune('a'+i))+"_"+rel, "/", "__"), string(b))
			return nil
		})
	}
}
