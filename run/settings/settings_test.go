package settings

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the README's settings table from Table")

// Every key of default.yaml is a row, every row a key, with the row's
// default, which the row's own parser takes.
func TestDefaultYAMLAgreesWithTable(t *testing.T) {
	values, err := ReadYAML("run/settings/default.yaml", DefaultYAML)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range Table {
		v, ok := values[row.Key]
		if !ok {
			t.Errorf("settings.Table row %s is not in run/settings/default.yaml", row.Key)
			continue
		}
		if v.Text != row.Default {
			t.Errorf("%s: run/settings/default.yaml has %q, settings.Table's default is %q", row.Key, v.Text, row.Default)
		}
		if _, err := row.Parse(v.Value); err != nil {
			t.Errorf("%s: its default is refused: %v", row.Key, err)
		}
	}
}

// Rows are well formed: one per key and flag, a flag named after its key
// (messages name it so), a doc pflag prints as written, commands given.
func TestTableRows(t *testing.T) {
	keys, flags, fields := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, row := range Table {
		if keys[row.Key] || fields[row.Field] || row.Flag != "" && flags[row.Flag] {
			t.Errorf("%s: key, field %s or flag %q declared twice", row.Key, row.Field, row.Flag)
		}
		keys[row.Key], fields[row.Field], flags[row.Flag] = true, true, true
		if row.Flag != "" && row.Flag != strings.ReplaceAll(row.Key, "_", "-") {
			t.Errorf("%s: flag --%s, want --%s", row.Key, row.Flag, strings.ReplaceAll(row.Key, "_", "-"))
		}
		if (row.Flag == "") != (len(row.Commands) == 0) {
			t.Errorf("%s: flag %q with commands %v", row.Key, row.Flag, row.Commands)
		}
		if row.Doc == "" || strings.Contains(row.Doc, "`") {
			t.Errorf("%s: doc %q must be plain text (pflag reads a `name` in usage as the argument's name)", row.Key, row.Doc)
		}
		if row.Field == "" {
			t.Errorf("%s: no orchestrator.Settings field", row.Key)
		}
		var err error
		switch row.Kind {
		case Count:
			_, _, err = row.countRange()
		case Ratio:
			_, _, err = row.ratioRange()
		case Duration:
			_, _, err = row.durationRange()
		default:
			if row.Range != (Range{}) {
				err = fmt.Errorf("a range on a %s setting", row.Kind.FlagType())
			}
		}
		if err != nil {
			t.Errorf("%s: %v", row.Key, err)
		}
		if len(row.Choices) > 0 && row.Kind != Text {
			t.Errorf("%s: choices on a %s setting", row.Key, row.Kind.FlagType())
		}
	}
}

// The ranges are what the docs say they are: a Count's ends are taken, the
// integers just outside refused.
func TestRangeEnds(t *testing.T) {
	for _, row := range Table {
		if row.Kind != Count {
			continue
		}
		lo, hi, _ := row.countRange()
		for n, ok := range map[int64]bool{lo: true, hi: true, lo - 1: false, hi + 1: false} {
			if _, err := row.Parse(TextValue(strconv.FormatInt(n, 10))); (err == nil) != ok {
				t.Errorf("%s: %d: error %v, want accepted %v", row.Key, n, err, ok)
			}
		}
	}
}

// Set and Get refuse a value or a field of the wrong type instead of panicking.
func TestSetGetTypes(t *testing.T) {
	type fake struct {
		MaxSeq int
		Prompt string
	}
	var s fake
	row, _ := Lookup("max_seq")
	if err := row.Set(&s, 7); err != nil || s.MaxSeq != 7 {
		t.Fatalf("Set(7): %v, field %d", err, s.MaxSeq)
	}
	if err := row.Set(&s, "7"); err == nil {
		t.Error(`Set("7") into an int field: no error`)
	}
	if _, err := row.Get(s); err == nil {
		t.Error("Get on a struct value, not a pointer: no error")
	}
	timeout, _ := Lookup("timeout")
	if _, err := timeout.Get(&s); err == nil || !strings.Contains(err.Error(), "no field Timeout") {
		t.Errorf("Get of a missing field: %v", err)
	}
	row.Field = "Prompt"
	if err := row.Set(&s, 3); err == nil {
		t.Error("a Count row on a string field: no error")
	}
}

const (
	readmeBegin = "<!-- settings table: generated from settings.Table (run/settings/settings.go) by `go test ./run/settings -run README -update` -->\n"
	readmeEnd   = "<!-- end of the settings table -->\n"
)

// readmeTable is the README's configuration table.
func readmeTable() string {
	var b strings.Builder
	b.WriteString("| key | flag | environment | takes | default | meaning |\n|---|---|---|---|---|---|\n")
	for _, row := range Table {
		flag, def := "–", "`\"\"`"
		if row.Flag != "" {
			flag = "`--" + row.Flag + "`"
			if row.Kind != Bool {
				flag = "`--" + row.Flag + " " + row.Kind.FlagType() + "`"
			}
			if !slices.Contains(row.Commands, Root) {
				flag += " (" + strings.Join(row.Commands, ", ") + ")"
			}
		}
		if row.Default != "" {
			def = "`" + row.Default + "`"
		}
		verdict := ""
		if row.Verdict {
			verdict = " ◆"
		}
		esc := strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace
		fmt.Fprintf(&b, "| `%s`%s | %s | `%s` | %s | %s | %s |\n", row.Key, verdict, flag, row.Env(), esc(row.Want()), def, esc(row.Doc))
	}
	return b.String()
}

// The README's configuration table is Table's (go test -update rewrites it).
func TestREADMESettingsTable(t *testing.T) {
	const path = "../../README.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i, j := strings.Index(text, readmeBegin), strings.Index(text, readmeEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: no settings table between %q and %q", path, readmeBegin, readmeEnd)
	}
	got, want := text[i+len(readmeBegin):j], readmeTable()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(text[:i+len(readmeBegin)]+want+text[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's settings table differs from settings.Table; run go test ./run/settings -run README -update\ngot:\n%s\nwant:\n%s", path, got, want)
}

// viaOptionsOnly are settings phase0.run takes through **options only.
var viaOptionsOnly = []string{"pyshim"}

// The Python API's keyword options (pyext/python/phase0/__init__.py) are
// settings, passed under their own names; run takes every setting.
func TestPythonOptionsAreSettings(t *testing.T) {
	const path = "../../cmd/pyext/python/phase0/__init__.py"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	notSettings := []string{"model", "config", "progress"}
	sig := regexp.MustCompile(`(?s)\ndef (inspect|baseline|run)\(\n(.*?)\n\) -> Report:.*?return _command\("(?:inspect|baseline|run)", model, config, progress, \{(.*?)\}\)`)
	param := regexp.MustCompile(`(?m)^    (\w+): `)
	passed := regexp.MustCompile(`"(\w+)": (_duration\(\w+\)|\w+)`)
	found := map[string]bool{}
	for _, m := range sig.FindAllStringSubmatch(string(data), -1) {
		fn := m[1]
		found[fn] = true
		var params []string
		for _, p := range param.FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(notSettings, p[1]) {
				params = append(params, p[1])
			}
		}
		var keys []string
		for _, p := range passed.FindAllStringSubmatch(m[3], -1) {
			keys = append(keys, p[1])
			if arg := strings.TrimSuffix(strings.TrimPrefix(p[2], "_duration("), ")"); arg != p[1] {
				t.Errorf("%s: phase0.%s passes %s as option %q", path, fn, arg, p[1])
			}
		}
		if !slices.Equal(params, keys) {
			t.Errorf("%s: phase0.%s's keywords %v, but it passes %v", path, fn, params, keys)
		}
		for _, k := range params {
			if _, ok := Lookup(k); !ok && !IsSection(k) {
				t.Errorf("%s: phase0.%s keyword %s is no setting in settings.Table", path, fn, k)
			}
		}
		if fn != "run" {
			continue
		}
		for _, row := range Table {
			top, _, _ := strings.Cut(row.Key, ".")
			if !slices.Contains(params, top) && !slices.Contains(viaOptionsOnly, row.Key) {
				t.Errorf("%s: phase0.run has no keyword for setting %s", path, row.Key)
			}
		}
	}
	for _, fn := range []string{"inspect", "baseline", "run"} {
		if !found[fn] {
			t.Errorf("%s: no def %s(...) -> Report calling _command: the test's pattern is stale", path, fn)
		}
	}
}
