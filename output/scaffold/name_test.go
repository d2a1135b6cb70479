package scaffold

import (
	"strings"
	"testing"
)

// CheckName says what is wrong with the name given (issue 36: "pass --name"
// to someone who had passed --name).
func TestCheckName(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"qwen3_0_6b", ""},
		{"_x", ""},
		{"a1", ""},
		{"../../etc/evil", `"../../etc/evil" is not a workspace name: it is a path, not one folder's name`},
		{`a\b`, "it is a path"},
		{"qwen3.5", "it holds a '.'"},
		{"3b", "it starts with a digit"},
		{"Qwen3_B", "it holds upper-case letters (qwen3_b would do)"},
		{"my-model", `it holds '-'`},
		{`say"hi`, `it holds '"'`},
		{"modèle", `it holds 'è'`},
		{"", "it is empty"},
		{"verify", "one of the llms tree's own folders"},
		{strings.Repeat("x/", 1000), `… (2000 bytes) is not a workspace name`},
	} {
		err := CheckName(tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v; want %q", tc.name, err, tc.want)
		case err != nil && (strings.Contains(err.Error(), "pass --name") || len(err.Error()) > 300):
			t.Errorf("%q: %v", tc.name, err)
		}
	}
}
