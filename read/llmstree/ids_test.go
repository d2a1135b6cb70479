package llmstree

import (
	"slices"
	"strings"
	"testing"

	"phase0/read/hfcache"
)

func TestHubIDs(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"MODEL_CHOICES", `MODEL_CHOICES = {
    "base": "Qwen/Qwen2.5-0.5B",
    "instruct": "Qwen/Qwen2.5-0.5B-Instruct",
}`, []string{"Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-0.5B-Instruct"}},
		{"one line, single quotes, duplicates", `MODEL_CHOICES = {'base': 'Qwen/Qwen3-0.6B', 'instruct': 'Qwen/Qwen3-0.6B'}`, []string{"Qwen/Qwen3-0.6B"}},
		{"conditional expression", `    model = (
        "meta-llama/Llama-3.2-1B-Instruct"
        if args.instruct
        else "meta-llama/Llama-3.2-1B"
    )`, []string{"meta-llama/Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-1B"}},
		{"a docstring mentioning ids is one literal", `"""Qwen2.5-0.5B has separate base ("Qwen/Qwen2.5-0.5B") and instruct
("Qwen/Qwen2.5-0.5B-Instruct") checkpoints."""
X = "org/model"`, []string{"org/model"}},
		{"comments are skipped, apostrophes included", "# don't use \"a/b\" here\nY = 'c/d'  # it's \"e/f\"\n", []string{"c/d"}},
		{"not ids", `cmds = ("/quit", "/exit", "a/b/c", "x/", "org/--bad", "org/name.git", "rev/x@main", "")`, nil},
		{"escaped quote inside a literal", `s = "he said \"org/fake\"" ; t = "org/real"`, []string{"org/real"}},
		{"prefixed strings", `a = f"org/{name}"; b = r'org/raw'; c = b"org/bytes"`, []string{"org/raw", "org/bytes"}},
		{"unterminated literal ends at the line", "a = \"org/open\nb = \"org/closed\"\n", []string{"org/closed"}},
		{"unterminated triple quote", `x = """org/never`, nil},
		{"single name without org", `"gpt2"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HubIDs([]byte(tc.src)); !slices.Equal(got, tc.want) {
				t.Errorf("HubIDs = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestHubIDsBounded(t *testing.T) {
	var b strings.Builder
	for i := range 3 * maxIDsInFile {
		b.WriteString(`"org/m` + strings.Repeat("x", i%5) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + "\"\n")
	}
	b.WriteString(`"org/` + strings.Repeat("n", 200) + `"`)
	if got := HubIDs([]byte(b.String())); len(got) != maxIDsInFile {
		t.Errorf("%d ids, want the bound %d", len(got), maxIDsInFile)
	}
}

func FuzzHubIDs(f *testing.F) {
	for _, s := range []string{
		`MODEL_CHOICES = {"base": "Qwen/Qwen2.5-0.5B", "instruct": "Qwen/Qwen2.5-0.5B-Instruct"}`,
		`"""doc "a/b" """ 'c/d' # 'e/f'`,
		`r"\"" "x/y"`, `'''`, `"""""`, "\"a/b\\", "'a/b\n'",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		ids := HubIDs(src)
		if len(ids) > maxIDsInFile {
			t.Fatalf("%d ids, more than %d", len(ids), maxIDsInFile)
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("duplicate %q", id)
			}
			seen[id] = true
			ref, err := hfcache.ParseID(id)
			if err != nil || ref.Org == "" || ref.Revision != "" {
				t.Fatalf("%q is not an org/name hub id: %v", id, err)
			}
			if !strings.Contains(string(src), id) {
				t.Fatalf("%q does not occur in the source", id)
			}
		}
	})
}
