package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"phase0/internal/testenv"
	"phase0/run/settings"
)

// A hostile value, as each source writes it.
type hostile struct {
	name   string
	text   string // a flag's or variable's text, and the YAML scalar written plainly
	yaml   string // the YAML value when it is not text written plainly
	python any    // the Python option as JSON decodes it (json.Number for a number)
}

// hostileValues are the sweep: each is tried on every setting from
// every source.
var hostileValues = []hostile{
	{name: "65.5", text: "65.5", python: json.Number("65.5")},
	{name: "0x41", text: "0x41", python: "0x41"},
	{name: "1_0", text: "1_0", python: "1_0"},
	{name: "1e3", text: "1e3", python: json.Number("1000.0")}, // Python's json.dumps(1e3)
	{name: "-1", text: "-1", python: json.Number("-1")},
	{name: "NaN", text: "NaN", python: "NaN"}, // a float nan never leaves Python (test_arguments.py)
	{name: "empty", text: "", yaml: `""`, python: ""},
	{name: "space 7", text: " 7", yaml: `" 7"`, python: " 7"},
	{name: "+3", text: "+3", python: "+3"},
	{name: "2^31", text: "2147483648", python: json.Number("2147483648")},
	{name: "list", yaml: "[a]", python: []any{"a"}},
	{name: "map", yaml: "{a: 1}", python: map[string]any{"a": json.Number("1")}},
	// A NUL (issue 36): no path or text can hold one; an environment
	// variable cannot carry one at all.
	{name: "NUL", text: "/data/o\x00x", yaml: `"/data/o\0x"`, python: "/data/o\x00x"},
}

// goodValue is a value the setting takes, as text.
func goodValue(row settings.Setting) string {
	switch {
	case row.Key == "pyshim":
		return testenv.PyShim() // a folder holding phase0_shim: anything else is refused
	case row.Default != "":
		return row.Default
	case len(row.Choices) > 1:
		return row.Choices[1]
	case row.Kind == settings.Lines:
		return "SPDX-License-Identifier: MIT"
	case row.Kind == settings.Path:
		return "/tmp/phase0-settings-table"
	}
	return "a_name"
}

// accepts says whether a setting of row's kind takes the text from a source
// that writes text (a flag, a variable, a quoted YAML string, a Python str).
// It is the documented rules, written out per kind, not the parser's code.
func accepts(row settings.Setting, name string) bool {
	switch row.Kind {
	case settings.Count, settings.Duration, settings.Bool:
		return false // none of the hostile values is an integer in range, a duration with a unit, or true/false
	case settings.Ratio:
		return name == "65.5" || name == "1e3" // finite decimals inside [0.0001, 1000]
	}
	if len(row.Choices) > 0 || beyondKind[row.Key] != "" {
		return name == "empty" // "" is a choice (decided from the model's name), no name (derived), the built-in pyshim
	}
	return name != "list" && name != "map" && name != "NUL"
}

// beyondKind are the settings checked past their kind's rule, with what
// their refusal says: a workspace name, a folder holding phase0_shim.
var beyondKind = map[string]string{"name": "is not a workspace name", "pyshim": "phase0_shim"}

// source is one way of giving a setting a value.
type source struct {
	name string
	// apply gives row the value; it returns the args, the options and the
	// origin a message must name ("" when the source cannot give this row).
	apply func(t *testing.T, row settings.Setting, h hostile) (args []string, opts map[string]any, origin string)
}

func sources() []source {
	return []source{
		{"flag", func(t *testing.T, row settings.Setting, h hostile) ([]string, map[string]any, string) {
			if row.Flag == "" || h.name == "list" || h.name == "map" {
				return nil, nil, "" // a flag is text: no list or map to give
			}
			return []string{"--" + row.Flag + "=" + h.text}, nil, "--" + row.Flag
		}},
		{"env", func(t *testing.T, row settings.Setting, h hostile) ([]string, map[string]any, string) {
			if h.name == "list" || h.name == "map" || h.name == "NUL" {
				return nil, nil, ""
			}
			t.Setenv(row.Env(), h.text)
			return nil, nil, row.Env()
		}},
		{"yaml", func(t *testing.T, row settings.Setting, h hostile) ([]string, map[string]any, string) {
			val := h.yaml
			if val == "" {
				val = h.text
			}
			path := filepath.Join(t.TempDir(), "s.yaml")
			body := row.Key + ": " + val + "\n"
			if section, leaf, ok := strings.Cut(row.Key, "."); ok {
				body = section + ":\n  " + leaf + ": " + val + "\n"
			}
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			line := strings.Count(body, "\n")
			return []string{"--config", path}, nil, fmt.Sprintf("%s:%d: %s", path, line, row.Key)
		}},
		{"python", func(t *testing.T, row settings.Setting, h hostile) ([]string, map[string]any, string) {
			return nil, map[string]any{row.Key: h.python}, "option " + row.Key
		}},
	}
}

// yamlForm is the form a plain YAML scalar has (yaml.v3's resolution).
func yamlForm(t *testing.T, text string) settings.Form {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("k: "+text), &n); err != nil {
		t.Fatal(err)
	}
	switch n.Content[0].Content[1].ShortTag() {
	case "!!str":
		return settings.FormText
	case "!!bool":
		return settings.FormBool
	}
	return settings.FormNumber
}

// commandFor is a command that reads the setting.
func commandFor(row settings.Setting) string {
	for _, c := range row.Commands {
		if c != settings.Root {
			return c
		}
	}
	return "run"
}

// parseSettings parses args on the real command's flags and layers its settings.
func parseSettings(t *testing.T, command string, args []string, opts map[string]any) (*cobraSettings, error) {
	t.Helper()
	root := newRoot(&invocation{stdout: io.Discard, stderr: io.Discard})
	cmd, _, err := root.Find([]string{command})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(args); err != nil {
		return nil, err
	}
	s, _, err := layerSettings(cmd, io.Discard, opts)
	if err != nil {
		return nil, err
	}
	return &cobraSettings{cmd: cmd, s: s}, nil
}

type cobraSettings struct {
	cmd *cobra.Command
	s   any
}

// TestEverySettingFromEverySource is the table of every setting × {flag,
// PHASE0_* variable, --config file, Python option} × {a good value and the
// hostile ones}, generated from settings.Table, so a new setting is covered
// without a new line here. A refusal names the source, the value and what
// the setting takes; an acceptance stores the parsed value.
func TestEverySettingFromEverySource(t *testing.T) {
	for _, k := range settings.Table {
		os.Unsetenv(k.Env()) // each case sets the one it tries
	}
	cases := 0
	for _, row := range settings.Table {
		command := commandFor(row)
		good := hostile{name: "good", text: goodValue(row)}
		good.python = good.text
		if row.Kind == settings.Text || row.Kind == settings.Path || row.Kind == settings.Lines {
			good.yaml = strconv.Quote(good.text) // a string, as a file should write one
		}
		if v, err := row.Parse(settings.TextValue(good.text)); err != nil {
			t.Fatalf("%s: the good value %q is refused: %v", row.Key, good.text, err)
		} else if b, ok := v.(bool); ok {
			good.python = b
		} else if row.Kind == settings.Count || row.Kind == settings.Ratio {
			good.python = json.Number(good.text)
		}
		for _, src := range sources() {
			for _, h := range append([]hostile{good}, hostileValues...) {
				t.Run(row.Key+"/"+src.name+"/"+h.name, func(t *testing.T) {
					args, opts, origin := src.apply(t, row, h)
					if origin == "" {
						t.Skip("this source cannot give this value")
					}
					cases++
					want := h.name == "good" || accepts(row, h.name)
					isText := row.Kind == settings.Text || row.Kind == settings.Path || row.Kind == settings.Lines
					switch {
					case src.name == "yaml" && h.yaml == "" && isText && yamlForm(t, h.text) != settings.FormText:
						want = false // a YAML number or bool where a string goes: quote it
					case src.name == "python" && isText:
						if _, isNumber := h.python.(json.Number); isNumber {
							want = false // out_dir=123
						}
					}
					got, err := parseSettings(t, command, args, opts)
					if want {
						if err != nil {
							t.Fatalf("refused: %v", err)
						}
						if h.name == "good" {
							checkStored(t, row, got.s, h.text)
						}
						return
					}
					if err == nil {
						t.Fatalf("%s from %s accepted", settings.Quote(h.text), origin)
					}
					msg := err.Error()
					if !strings.HasPrefix(msg, origin+": ") {
						t.Errorf("the message does not open with the source %q: %s", origin, msg)
					}
					switch h.name {
					case "list", "map":
						if !strings.Contains(msg, "a "+h.name+" is not") {
							t.Errorf("the message does not say a %s is refused: %s", h.name, msg)
						}
					default:
						given := h.text
						if src.name == "python" {
							given = fmt.Sprint(h.python)
						}
						if !strings.Contains(msg, settings.Quote(given)) && !strings.Contains(msg, "the bool") {
							t.Errorf("the message does not quote the value %s: %s", settings.Quote(given), msg)
						}
					}
					if !strings.Contains(msg, row.Want()) && (beyondKind[row.Key] == "" || !strings.Contains(msg, beyondKind[row.Key])) {
						t.Errorf("the message does not say what %s takes (%s): %s", row.Key, row.Want(), msg)
					}
				})
			}
		}
	}
	t.Logf("%d cases", cases)
}

// checkStored: the parsed value reached the setting's field.
func checkStored(t *testing.T, row settings.Setting, s any, text string) {
	t.Helper()
	want, _ := row.Parse(settings.TextValue(text))
	got, err := row.Get(s)
	if err != nil {
		t.Fatal(err)
	}
	if row.Kind == settings.Lines || row.Key == "python" {
		return // converted to comment lines; python "" becomes make's venv
	}
	if !reflect.DeepEqual(reflect.ValueOf(got).Convert(reflect.TypeOf(want)).Interface(), want) {
		t.Errorf("stored %v, want %v", got, want)
	}
}
