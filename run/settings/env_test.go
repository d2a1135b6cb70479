package settings

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestUnknownEnv(t *testing.T) {
	// Misspelled names are built in two parts: the repository scan below
	// must not take them for variables.
	p := "PHASE0_"
	for _, tc := range []struct {
		name    string
		environ []string
		want    []string // substrings of the error; none: no error
	}{
		{"no phase0 variable", []string{"HOME=/root", "PHASE0=1", "XPHASE0_WORKERS=2"}, nil},
		{"every setting's variable", settingEnv(), nil},
		{"the other variables", otherEnv(), nil},
		{"a swapped pair of letters", []string{p + "WORKRES=2"}, []string{p + "WORKRES is not a phase0 setting's variable", "did you mean PHASE0_WORKERS?"}},
		{"a dropped letter", []string{p + "TIMOUT=1m"}, []string{"did you mean PHASE0_TIMEOUT?"}},
		{"a dash for an underscore is still not it", []string{p + "MAX-SEQ=8"}, []string{"did you mean PHASE0_MAX_SEQ?"}},
		{"lower case", []string{p + "workers=2"}, []string{p + "workers is not", "did you mean PHASE0_WORKERS?"}},
		{"mixed case", []string{p + "Max_Seq=8"}, []string{"did you mean PHASE0_MAX_SEQ?"}},
		{"mixed case and a swapped pair", []string{p + "Workres=2"}, []string{"did you mean PHASE0_WORKERS?"}},
		{"far from any", []string{p + "SOMETHING_ELSE_ENTIRELY=1"}, []string{"is not a phase0 setting's variable (the variables phase0 accepts are listed in " + EnvTable}},
		// issue 49 item 8: the variables that are no setting, their
		// misspellings and settings' variables with words left off.
		{"an other variable misspelled", []string{p + "PROGRESS_INTERVALL=2"}, []string{"did you mean PHASE0_PROGRESS_INTERVAL?", EnvTable}},
		{"an other variable without its underscore", []string{p + "MODELDIR=/m"}, []string{"did you mean PHASE0_MODEL_DIR?"}},
		{"a setting's last word left off", []string{p + "MAX_PERPLEXITY=3"}, []string{"did you mean PHASE0_MAX_PERPLEXITY_RATIO?"}},
		{"a setting's first words left off", []string{p + "ATTENTION_FALLBACK=false"}, []string{"did you mean PHASE0_CPU_HELPERS_ATTENTION_FALLBACK?"}},
		{"a word added", []string{p + "WORKERS_COUNT=3"}, []string{"did you mean PHASE0_WORKERS?"}},
		{"words of two variables", []string{p + "MAX=3"}, []string{"(the variables phase0 accepts are listed in"}},
		{"an interval that is no number", []string{"PHASE0_PROGRESS_INTERVAL=abc"}, []string{`PHASE0_PROGRESS_INTERVAL: "abc" is not a finite decimal number in [0, 3600]`, EnvTable}},
		{"a negative interval", []string{"PHASE0_PROGRESS_INTERVAL=-5"}, []string{`"-5" is not a finite decimal number in [0, 3600]`}},
		{"an empty interval", []string{"PHASE0_PROGRESS_INTERVAL="}, []string{`"" is not a finite decimal number`}},
		{"an interval of NaN", []string{"PHASE0_PROGRESS_INTERVAL=NaN"}, []string{`"NaN" is not`}},
		{"finalize maybe", []string{"PHASE0_WORKER_FINALIZE=maybe"}, []string{`PHASE0_WORKER_FINALIZE: "maybe" is not one of "0", "1"`}},
		{"good values", []string{"PHASE0_PROGRESS_INTERVAL=0.5", "PHASE0_PROGRESS_INTERVAL=0", "PHASE0_WORKER_FINALIZE=1", "PHASE0_WORKER_FINALIZE=0", "PHASE0_MODEL_DIR=/m"}, nil},
		{"an unknown name is said before a bad value", []string{"PHASE0_WORKER_FINALIZE=maybe", p + "ZZ=1"}, []string{p + "ZZ is not"}},
		{"empty name and value", []string{p + "="}, []string{p + " is not"}},
		{"several: the first named, the rest counted", []string{p + "ZZ=1", p + "AA=1", "PHASE0_SCAN=true"}, []string{p + "AA is not", "; 1 more: " + p + "ZZ)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := UnknownEnv(tc.environ)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func settingEnv() []string {
	var out []string
	for _, row := range Table {
		out = append(out, row.Env()+"=x")
	}
	return out
}

func otherEnv() []string {
	var out []string
	for name := range OtherEnv {
		value := "x"
		if row, ok := OtherEnvValues[name]; ok && row.Kind != Path {
			value = "1"
		}
		out = append(out, name+"="+value)
	}
	return out
}

// TestOtherVariablesTable: docs/settings.md's table of the variables that
// are no setting lists exactly OtherEnvValues, each with what it takes:
// the page the messages point at (EnvTable).
func TestOtherVariablesTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "settings.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	anchor := strings.TrimPrefix(EnvTable, "docs/settings.md#")
	if !strings.Contains(page, "\n## Environment variables\n") || anchor != "environment-variables" {
		t.Fatalf("docs/settings.md has no section for %s", EnvTable)
	}
	_, rest, ok1 := strings.Cut(page, "<!-- other variables:")
	table, _, ok2 := strings.Cut(rest, "<!-- end of the other variables -->")
	if !ok1 || !ok2 {
		t.Fatal("docs/settings.md lacks the other variables' table markers")
	}
	listed := map[string]bool{}
	for line := range strings.Lines(table) {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 3 || !strings.HasPrefix(strings.TrimSpace(cells[0]), "`PHASE0_") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		row, ok := OtherEnvValues[name]
		if !ok {
			t.Errorf("docs/settings.md lists %s, which OtherEnvValues lacks", name)
			continue
		}
		if got := strings.TrimSpace(cells[1]); got != row.Want() {
			t.Errorf("%s takes %q in docs/settings.md, %q in OtherEnvValues", name, got, row.Want())
		}
		listed[name] = true
	}
	for name := range OtherEnvValues {
		if !listed[name] {
			t.Errorf("docs/settings.md does not list %s", name)
		}
		if OtherEnv[name] == "" {
			t.Errorf("%s has a value rule but is not in OtherEnv", name)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"abc", "abc", 0},
		{"abc", "acb", 1}, {"kitten", "sitting", 3}, {"WORKERS", "WORKRES", 1}, {"ca", "abc", 3},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestEveryPhase0VariableIsDeclared: every PHASE0_* name the repository
// mentions (code, Makefile, docs, generated files) is a setting's variable
// or in OtherEnv, and every OtherEnv name is used somewhere and is no
// setting's: the list UnknownEnv accepts is the one the project uses.
func TestEveryPhase0VariableIsDeclared(t *testing.T) {
	root := filepath.Join("..", "..")
	re := regexp.MustCompile(`PHASE0_[A-Z0-9_]*[A-Z0-9]`)
	settings := map[string]bool{}
	for _, row := range Table {
		settings[row.Env()] = true
	}
	used := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "dist", "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".py", ".md", ".sh", ".yaml", ".yml", ".txt", ".toml":
		default:
			if d.Name() != "Makefile" {
				return nil
			}
		}
		if path == filepath.Join(root, "run", "settings", "env.go") {
			return nil // the declarations themselves
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, name := range re.FindAllString(string(data), -1) {
			if _, seen := used[name]; !seen {
				used[name] = path
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The docs' examples of refused typos.
	typos := map[string]bool{"PHASE0_" + "WORKRES": true, "PHASE0_" + "MAX_PERPLEXITY": true}
	for name, path := range used {
		if typos[name] {
			if UnknownEnv([]string{name + "=1"}) == nil {
				t.Errorf("%s (the example in %s) is accepted", name, path)
			}
			continue
		}
		if !settings[name] && OtherEnv[name] == "" {
			t.Errorf("%s (used in %s) is neither a setting's variable nor in settings.OtherEnv: phase0 would refuse it", name, path)
		}
	}
	for name := range OtherEnv {
		if settings[name] {
			t.Errorf("OtherEnv declares %s, a setting's variable", name)
		}
		if _, ok := used[name]; !ok {
			t.Errorf("OtherEnv declares %s, which nothing in the repository uses", name)
		}
	}
}
