package settings

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// The parser's rules, per kind, on values from a text source and from
// YAML's typed scalars (the table test in cmd/internal/cli tries every row from
// every source).
func TestParse(t *testing.T) {
	count := Setting{Key: "n", Kind: Count, Range: Range{"0", "1024"}}
	ratio := Setting{Key: "r", Kind: Ratio, Range: Range{"0.0001", "1000"}}
	dur := Setting{Key: "d", Kind: Duration, Range: Range{"1s", "168h"}}
	flag := Setting{Key: "b", Kind: Bool}
	text := Setting{Key: "s", Kind: Text}
	style := Setting{Key: "c", Kind: Text, Choices: []string{"", "base"}}
	num := func(s string) Value { return Value{Text: s, Form: FormNumber} }
	for _, tc := range []struct {
		row  Setting
		v    Value
		want any // nil: refused
	}{
		{count, TextValue("7"), 7},
		{count, num("1024"), 1024},
		{count, TextValue("0"), 0},
		{count, TextValue("007"), nil},
		{count, TextValue("-0"), nil},
		{count, num("-0"), nil},
		{count, TextValue("1025"), nil},
		{count, TextValue("99999999999999999999"), nil},
		{count, num("7.0"), nil},
		{count, Value{Text: "true", Form: FormBool}, nil},
		{count, Value{Form: FormNull}, nil},
		{ratio, num("0.1"), 0.1},
		{ratio, TextValue("2e-3"), 2e-3},
		{ratio, TextValue("1000"), 1000.0},
		{ratio, TextValue(".5"), nil},
		{ratio, TextValue("5."), nil},
		{ratio, TextValue("0x1p-2"), nil},
		{ratio, TextValue("Inf"), nil},
		{ratio, num(".nan"), nil},
		{ratio, TextValue("1e400"), nil},
		{ratio, TextValue("0"), nil},
		{dur, TextValue("90s"), 90 * time.Second},
		{dur, TextValue("1h30m"), 90 * time.Minute},
		{dur, TextValue("1.5h"), 90 * time.Minute},
		{dur, num("90"), nil},
		{dur, TextValue("90"), nil},
		{dur, TextValue("+90s"), nil},
		{dur, TextValue("500ms"), nil},
		{dur, TextValue("169h"), nil},
		{flag, TextValue("true"), true},
		{flag, Value{Text: "false", Form: FormBool}, false},
		{flag, Value{Text: "True", Form: FormBool}, nil},
		{flag, TextValue("1"), nil},
		{flag, TextValue("yes"), nil},
		{text, TextValue(" x "), " x "},
		{text, TextValue("/data/o\x00x"), nil},
		{Setting{Key: "p", Kind: Path}, TextValue("/data/o\x00x"), nil},
		{Setting{Key: "l", Kind: Lines}, TextValue("SPDX\x00"), nil},
		{text, Value{Form: FormNull}, ""},
		{text, num("123"), nil},
		{text, Value{Form: FormList}, nil},
		{style, TextValue("base"), "base"},
		{style, TextValue(""), ""},
		{style, TextValue("chat"), nil},
	} {
		got, err := tc.row.Parse(tc.v)
		switch {
		case tc.want == nil && err == nil:
			t.Errorf("%s %+v: accepted as %v", tc.row.Key, tc.v, got)
		case tc.want == nil && !errors.Is(err, ErrValue):
			t.Errorf("%s %+v: error %v is not ErrValue", tc.row.Key, tc.v, err)
		case tc.want != nil && (err != nil || got != tc.want):
			t.Errorf("%s %+v: %v, %v; want %v", tc.row.Key, tc.v, got, err, tc.want)
		}
	}
}

// A settings file has one shape: one document, a mapping of known keys,
// each once, a section holding a mapping.
func TestReadYAMLShape(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, err string
	}{
		{"empty", "", ""},
		{"comments only", "# nothing\n", ""},
		{"a scalar document", "42\n", "the top level is the number 42"},
		{"a list document", "- scan\n", "the top level is a list"},
		{"two documents", "scan: true\n---\nscan: false\n", "s.yaml:2: a second YAML document"},
		{"unknown key", "scann: true\n", `s.yaml:1: unknown setting "scann"`},
		{"unknown key in a section", "cpu_helpers:\n  attention: true\n", `unknown setting "cpu_helpers.attention"`},
		{"a section as a scalar", "cpu_helpers: true\n", "section cpu_helpers is the bool true"},
		{"a key twice", "scan: true\nscan: false\n", "s.yaml:2: scan appears twice"},
		{"dotted, then in its section", "cpu_helpers.attention_fallback: false\ncpu_helpers:\n  attention_fallback: true\n",
			"s.yaml:3: cpu_helpers.attention_fallback appears twice (first at s.yaml:1: cpu_helpers.attention_fallback)"},
		{"in its section, then dotted", "cpu_helpers:\n  attention_fallback: true\ncpu_helpers.attention_fallback: false\n",
			"s.yaml:3: cpu_helpers.attention_fallback appears twice"},
		{"a merge key", "<<: {scan: true}\n", "a key is"},
		{"a binary value", "prompt: !!binary aGk=\n", "a !!binary value"},
		{"capitals", "Scan: true\n", `unknown setting "Scan"`},
		{"not YAML", "scan: [\n", "s.yaml: not valid YAML"},
		{"an alias", "prompt: &p hello\nname: *p\n", ""},
		{"empty section", "cpu_helpers:\n", ""},
	} {
		_, err := ReadYAML("s.yaml", []byte(tc.yaml))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrFile)):
			t.Errorf("%s: error %v, want ErrFile saying %q", tc.name, err, tc.err)
		}
	}
}

// An explicit YAML tag says what a value is: `!!float 7` is the float 7.0,
// which an integer setting refuses and a decimal one takes.
func TestYAMLTags(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want any // nil: refused
	}{
		{"workers: !!float 7\n", nil},
		{"decode: !!float \"3\"\n", nil},
		{"workers: !!int \"7\"\n", 7},
		{"max_perplexity_ratio: !!float 1\n", 1.0},
		{"max_perplexity_ratio: !!float 0.5\n", 0.5},
		// !!str says the value is a string: not a number, not a bool.
		{"workers: !!str 7\n", nil},
		{"max_perplexity_ratio: !!str 0.5\n", nil},
		{"scan: !!str true\n", nil},
		{"timeout: !!str 90s\n", 90 * time.Second},
		{"name: !!str abc\n", "abc"},
		{"workers: \"7\"\n", 7}, // quoted, untagged: text, as a variable's
	} {
		values, err := ReadYAML("s.yaml", []byte(tc.yaml))
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		for key, v := range values {
			row, _ := Lookup(key)
			got, err := row.Parse(v.Value)
			if tc.want == nil && err == nil || tc.want != nil && got != tc.want {
				t.Errorf("%q: %v, %v; want %v", tc.yaml, got, err, tc.want)
			}
			if strings.Contains(tc.yaml, "!!str") && err != nil && !strings.Contains(err.Error(), "!!str tag makes it a string") {
				t.Errorf("%q: %v; want it to name the !!str tag", tc.yaml, err)
			}
		}
	}
}

// FuzzReadYAML: any bytes are read or refused, never a panic; what is read
// names only settings, and parses or is refused with ErrValue.
func FuzzReadYAML(f *testing.F) {
	f.Add(DefaultYAML)
	f.Add([]byte("workers: 0x41\ntimeout: 90\nout_dir: [/x]\n"))
	f.Add([]byte("cpu_helpers: {attention_fallback: *a}\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		values, err := ReadYAML("f.yaml", data)
		if err != nil {
			if !errors.Is(err, ErrFile) {
				t.Fatalf("error without ErrFile: %v", err)
			}
			return
		}
		for key, v := range values {
			row, ok := Lookup(key)
			if !ok {
				t.Fatalf("read unknown key %q", key)
			}
			if _, err := row.Parse(v.Value); err != nil && !errors.Is(err, ErrValue) {
				t.Fatalf("%s: error without ErrValue: %v", key, err)
			}
		}
	})
}
