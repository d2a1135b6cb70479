package hfcache

import (
	"errors"
	"strings"
	"testing"
)

func TestParseID(t *testing.T) {
	long := strings.Repeat("a", 96)
	tests := []struct {
		in      string
		want    Ref
		wantErr string // substring; empty means success
	}{
		{in: "Qwen/Qwen3-0.6B", want: Ref{ID: "Qwen/Qwen3-0.6B", Org: "Qwen", Name: "Qwen3-0.6B"}},
		{in: "gpt2", want: Ref{ID: "gpt2", Name: "gpt2"}},
		{in: "meta-llama/Llama-3.2-1B@main", want: Ref{ID: "meta-llama/Llama-3.2-1B", Org: "meta-llama", Name: "Llama-3.2-1B", Revision: "main"}},
		{in: "a/b@refs/pr/1", want: Ref{ID: "a/b", Org: "a", Name: "b", Revision: "refs/pr/1"}},
		{in: "a/b@0123456789abcdef0123456789abcdef01234567", want: Ref{ID: "a/b", Org: "a", Name: "b", Revision: "0123456789abcdef0123456789abcdef01234567"}},
		{in: "org/" + long, want: Ref{ID: "org/" + long, Org: "org", Name: long}},
		{in: "_x_/Foo-BAR_foo.bar123", want: Ref{ID: "_x_/Foo-BAR_foo.bar123", Org: "_x_", Name: "Foo-BAR_foo.bar123"}},

		{in: "", wantErr: "empty repo id"},
		{in: "org/" + long + "a", wantErr: "97 characters long, the maximum is 96"},
		{in: "datasets/foo/bar", wantErr: "has 2 '/'"},
		{in: ".repo", wantErr: "must start and end"},
		{in: "org/repo-", wantErr: "must start and end"},
		{in: "-org/repo", wantErr: "must start and end"},
		{in: "org/", wantErr: "empty name"},
		{in: "/repo", wantErr: "empty namespace"},
		{in: "foo--bar", wantErr: `cannot contain "--"`},
		{in: "org/other..repo", wantErr: `cannot contain "--" or ".."`},
		{in: "org/foo.git", wantErr: `cannot end with ".git"`},
		{in: "org/re po", wantErr: "character ' ' at byte offset 2"},
		// A non-ASCII character is named as text, not as a byte of its encoding.
		{in: "org/réпо", wantErr: "has character 'é' at byte offset 1"},
		{in: "orgé/nämé", wantErr: `namespace "orgé" has character 'é' at byte offset 3`},
		{in: "org/模型", wantErr: "has character '模' at byte offset 0"},
		{in: "org/repo@", wantErr: "empty revision"},
		{in: "org/repo@../../x", wantErr: `cannot contain ".."`},
		{in: "org/repo@/etc", wantErr: "cannot start or end with '/'"},
		{in: "org/repo@a b", wantErr: "forbidden character ' '"},
		{in: "org/repo@x.lock", wantErr: `".lock"`},
		{in: "org/repo@a/.hidden", wantErr: "starting with '.'"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseID(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseID(%q) = %+v, want error containing %q", tt.in, got, tt.wantErr)
				}
				if !errors.Is(err, ErrInvalidID) {
					t.Errorf("error %v is not ErrInvalidID", err)
				}
				if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.in) {
					t.Errorf("error %q should contain %q and name the input", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseID(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseID(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			if got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func TestFolderName(t *testing.T) {
	for in, want := range map[string]string{
		"julien-c/EsperBERTo-small": "models--julien-c--EsperBERTo-small",
		"gpt2":                      "models--gpt2",
	} {
		ref, err := ParseID(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := ref.FolderName(); got != want {
			t.Errorf("FolderName(%q) = %q, want %q", in, got, want)
		}
	}
}
