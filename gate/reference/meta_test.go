package reference

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// malformed is the corpus of reference.json files no recorder writes
// (testdata/malformed), each with what the refusal must say. Before issue
// 31 case 12, compare judged the first four as PASS.
var malformed = map[string]string{
	"duplicate_role":          `key "role" appears twice`,
	"invalid_utf8":            "not UTF-8: invalid byte 0xe9",
	"negative_tensors_bytes":  "tensors_bytes is -1, outside [0, 8589934592]",
	"n_layers_10e12":          "n_layers is 1000000000000, outside [0, 8192]",
	"duplicate_nested":        `key "seconds.decode" appears twice`,
	"n_layers_1e400":          "n_layers",
	"decode_steps_beyond":     "decode_steps is 100000, outside [1, 1024]",
	"top_k_zero":              "top_k 0: each must be at least 1",
	"top_k_beyond":            "top_k is 100000, outside [1, 256]",
	"canonical_prompt_beyond": "canonical_prompt 5 is not one of the 1 prompts",
	"runner_escape":           `runner: a control character "\x1b" at byte 0`,
	"runner_empty":            "runner is empty",
	"tensors_sha256_short":    `tensors_sha256 "abc": want 64 lower-case hex digits`,
	"created_word":            `created "yesterday": want an RFC 3339 time`,
	"seconds_negative":        `seconds["decode"] is -1, outside [0, 1e+07]`,
	"torch_threads_negative":  "torch_threads is -4, outside [0, 65536]",
	"prompts_empty":           "0 prompts",
	"prompt_with_nul":         `prompts[0]: a control character "\x00" at byte 1`,
	"dtype_spaces":            `dtype "bf 16"`,
	"format_other":            `format "phase0-reference/2"`,
	"role_judge":              `role "judge"`,
	"not_an_object":           "cannot unmarshal array",
	"truncated":               "unexpected end of JSON input",
}

// Every file of the corpus is refused as ErrFormat, naming the file and
// what is wrong; the corpus and the table list the same files.
func TestReadMetaRefusesTheMalformedCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/malformed/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	seen := map[string]bool{}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		seen[name] = true
		want, ok := malformed[name]
		if !ok {
			t.Errorf("%s: not in the table of malformed files", file)
			continue
		}
		dir := t.TempDir()
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, MetaFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err = ReadMeta(dir)
		if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), MetaFile) {
			t.Errorf("%s: error %v; want ErrFormat naming %s and saying %q", name, err, MetaFile, want)
		}
	}
	for name := range malformed {
		if !seen[name] {
			t.Errorf("%s: in the table, not in testdata/malformed", name)
		}
	}
}

// The checks refuse only what they should: the corpus's base file, as a
// recorder writes it, is read.
func TestReadMetaTakesAWellFormedFile(t *testing.T) {
	data, err := os.ReadFile("testdata/malformed/top_k_zero.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := strings.Replace(string(data), `"top_k": 0`, `"top_k": 5`, 1)
	if err := os.WriteFile(filepath.Join(dir, MetaFile), []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := ReadMeta(dir); err != nil || m.TopK != 5 || m.NLayers != 2 {
		t.Fatalf("%+v, %v", m, err)
	}
}

// FuzzReadMeta mutates the corpus: ReadMeta's decoder returns ErrFormat or
// metadata inside every range, never panics.
func FuzzReadMeta(f *testing.F) {
	files, _ := filepath.Glob("testdata/malformed/*.json")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseMeta(MetaFile, data)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error without ErrFormat: %v", err)
			}
			return
		}
		if err := checkMeta(MetaFile, m); err != nil {
			t.Fatalf("read metadata its own check refuses: %v", err)
		}
		if m.DecodeSteps > MaxSteps || m.TopK > MaxTopK || len(m.Prompts) > MaxPrompts || m.TensorsBytes < 0 {
			t.Fatalf("read out of range: %+v", m)
		}
	})
}
