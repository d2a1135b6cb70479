package settings

import (
	"fmt"
	"slices"
	"strings"
)

// OtherEnv are the PHASE0_* variables that are not settings: read by what
// phase0 generates or runs (a user may well have them set), or by its own
// build, tests and benchmarks. Every other PHASE0_* variable in a command's
// environment is refused (UnknownEnv): a misspelled setting must not pass
// in silence. TestEveryPhase0VariableIsDeclared keeps this list equal to
// the names the repository uses.
var OtherEnv = map[string]string{
	"PHASE0_MODEL_DIR":         "the checkpoint a generated <name>_weights.py loads instead of its default",
	"PHASE0_PROGRESS_INTERVAL": "the seconds between the worker's progress lines (0: every update)",
	"PHASE0_WORKER_FINALIZE":   "1: the worker runs Py_FinalizeEx before it exits (slower; for comparison), 0: it does not",
	// The worker's own protocol, set by phase0 for the Python it starts.
	"PHASE0_WORKER_PYTHON": "the worker's interpreter (set by phase0 for its child)",
	"PHASE0_WORKER_PATH":   "the worker's extra sys.path (set by phase0 for its child)",
	"PHASE0_WORKER_MODULE": "the worker's ops module (set by phase0 for its child)",
	// make test, make bench and make calibrate.
	"PHASE0_TEST_PYTHONS":       "make test: the other CPython minors the bridge is tested in",
	"PHASE0_MLIR_AIR":           "tests: a fetched mlir-air programming_examples for the real-tree tests",
	"PHASE0_BLACK":              "make test: the black that checks generated Python",
	"PHASE0_XSD_PYTHON":         "make test: the python with xmlschema for the JUnit schema check",
	"PHASE0_BENCH_ONLY":         "make bench: a substring of the benchmark rows to run",
	"PHASE0_SCAN_BENCH_MB":      "go test -bench: the size of the scan benchmark's checkpoint",
	"PHASE0_CALIBRATE":          "make calibrate: run (1) or pin (pin) the gate 2 calibration",
	"PHASE0_WHEEL":              "make test-python-package: the wheel under test",
	"PHASE0_REPO":               "make test-python-package: the repository's root",
	"PHASE0_PYEXT_RUN_FAMILIES": "make test-python-package: the families run in the other minors",
	// Test processes re-executing the test binary.
	"PHASE0_TEST_AS_MAIN":              "tests: the test binary runs phase0's main",
	"PHASE0_TEST_HOLD_LOCK":            "tests: a child holding a workspace lock",
	"PHASE0_TEST_FACTS_DUMP":           "tests: the folder the end-to-end tests dump their stage lines and reports into (docs/DEVELOPING.md)",
	"PHASE0_WORKER_TEST_CHILD":         "tests: a child worker",
	"PHASE0_WORKER_TEST_PARENT":        "tests: a parent that starts a worker and is killed",
	"PHASE0_WORKER_TEST_PARENT_PYTHON": "tests: that parent's worker interpreter",
	"PHASE0_BRIDGE_TEST_START":         "tests: a child starting the embedded interpreter",
}

// OtherEnvValues are what the variables of OtherEnv a user may set take,
// parsed by the settings' own parser (abc or -5 is refused as it would be
// for a setting). docs/settings.md's table of variables that are no setting
// lists exactly these (TestOtherVariablesTable).
var OtherEnvValues = map[string]Setting{
	"PHASE0_MODEL_DIR":         {Key: "PHASE0_MODEL_DIR", Kind: Path},
	"PHASE0_PROGRESS_INTERVAL": {Key: "PHASE0_PROGRESS_INTERVAL", Kind: Ratio, Range: Range{"0", "3600"}},
	"PHASE0_WORKER_FINALIZE":   {Key: "PHASE0_WORKER_FINALIZE", Kind: Text, Choices: []string{"0", "1"}},
}

// EnvTable is where the messages send a user for the variables phase0
// accepts.
const EnvTable = "docs/settings.md#environment-variables"

// UnknownEnv returns an error naming the first PHASE0_* variable of environ
// (KEY=value entries) that is neither a setting's nor in OtherEnv, with the
// variable it most likely misspells; else one naming the first variable of
// OtherEnvValues whose value its row does not take.
func UnknownEnv(environ []string) error {
	known := map[string]bool{}
	var names []string
	for _, row := range Table {
		known[row.Env()] = true
		names = append(names, row.Env())
	}
	for name := range OtherEnvValues {
		names = append(names, name)
	}
	slices.Sort(names[len(Table):])
	var unknown, badValue []string
	values := map[string]string{}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case !strings.HasPrefix(name, "PHASE0_") || known[name]:
		case OtherEnv[name] == "":
			unknown = append(unknown, name)
		default:
			if row, ok := OtherEnvValues[name]; ok {
				if _, err := row.Parse(TextValue(value)); err != nil {
					badValue = append(badValue, name)
					values[name] = err.Error()
				}
			}
		}
	}
	if len(unknown) == 0 {
		if len(badValue) == 0 {
			return nil
		}
		slices.Sort(badValue)
		name := badValue[0]
		return fmt.Errorf("%s: %s (the variable is %s; see %s)", name, values[name], OtherEnv[name], EnvTable)
	}
	slices.Sort(unknown)
	name := unknown[0]
	hint := "the variables phase0 accepts are listed in " + EnvTable
	if near := nearest(name, names); near != "" {
		hint = "did you mean " + near + "? the variables phase0 accepts are listed in " + EnvTable
	}
	more := ""
	if len(unknown) > 1 {
		more = fmt.Sprintf("; %d more: %s", len(unknown)-1, strings.Join(unknown[1:], ", "))
	}
	return fmt.Errorf("%s is not a phase0 setting's variable (%s%s): unset it or fix its name", name, hint, more)
}

// nearest is the name among names equal to s but for case, else within a
// small edit distance of s in capitals (the closest; ties to the first), or "".
func nearest(s string, names []string) string {
	best, bestD := "", 3 // at most two edits away
	for _, n := range names {
		if strings.EqualFold(s, n) {
			return n // PHASE0_workers: the case alone is wrong
		}
	}
	upper := strings.ToUpper(s) // PHASE0_Workres: the case and a swap
	for _, n := range names {
		if d := editDistance(upper, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best != "" {
		return best
	}
	return byWords(upper, names)
}

// byWords is the one name among names whose words (split on '_' after
// PHASE0_) hold all of s's in order, one after the other, or whose words s
// holds so: a setting's variable with words left off (PHASE0_MAX_PERPLEXITY
// for PHASE0_MAX_PERPLEXITY_RATIO, PHASE0_ATTENTION_FALLBACK for
// PHASE0_CPU_HELPERS_ATTENTION_FALLBACK) or with words added. "" when none
// or more than one does.
func byWords(s string, names []string) string {
	words := func(n string) string {
		return "_" + strings.TrimPrefix(strings.ReplaceAll(n, "-", "_"), "PHASE0_") + "_"
	}
	w := words(s)
	if w == "__" {
		return ""
	}
	found := ""
	for _, n := range names {
		nw := words(n)
		if strings.Contains(nw, w) || strings.Contains(w, nw) {
			if found != "" {
				return ""
			}
			found = n
		}
	}
	return found
}

// editDistance is the Levenshtein distance of a and b, with a transposition
// of two neighbours counting as one edit (Damerau's restricted form).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
