package hfcache

import (
	"os"
	"os/user"
	"path/filepath"
	"testing"
)

func TestCacheDir(t *testing.T) {
	root, err := user.Lookup("root")
	if err != nil {
		t.Fatalf("looking up user root: %v", err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"defaults", map[string]string{"HOME": "/home/u"}, "/home/u/.cache/huggingface/hub"},
		{"xdg", map[string]string{"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg"}, "/xdg/huggingface/hub"},
		{"hf_home beats xdg", map[string]string{"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg", "HF_HOME": "/hf"}, "/hf/hub"},
		{"legacy beats hf_home", map[string]string{"HF_HOME": "/hf", "HUGGINGFACE_HUB_CACHE": "/legacy"}, "/legacy"},
		{"hf_hub_cache beats all", map[string]string{"HF_HOME": "/hf", "HUGGINGFACE_HUB_CACHE": "/legacy", "HF_HUB_CACHE": "/hub"}, "/hub"},
		{"empty counts as unset", map[string]string{"HOME": "/home/u", "HF_HUB_CACHE": "", "HF_HOME": ""}, "/home/u/.cache/huggingface/hub"},
		{"tilde in hf_home", map[string]string{"HOME": "/home/u", "HF_HOME": "~/hf"}, "/home/u/hf/hub"},
		{"tilde in hub cache", map[string]string{"HOME": "/home/u", "HF_HUB_CACHE": "~"}, "/home/u"},
		{"tilde user", map[string]string{"HF_HUB_CACHE": "~root/c"}, root.HomeDir + "/c"},
		{"unknown tilde user kept", map[string]string{"HF_HUB_CACHE": "~no-such-user-x/c"}, "~no-such-user-x/c"},
		{"vars expanded", map[string]string{"SCRATCH": "/s", "HF_HOME": "$SCRATCH/hf"}, "/s/hf/hub"},
		{"braced vars", map[string]string{"SCRATCH": "/s", "HF_HUB_CACHE": "${SCRATCH}/hub"}, "/s/hub"},
		{"unset var kept", map[string]string{"HF_HUB_CACHE": "/a/$NOPE/${NOPE2}/b$"}, "/a/$NOPE/${NOPE2}/b$"},
		{"xdg with var", map[string]string{"FAST": "/f", "XDG_CACHE_HOME": "$FAST/c"}, "/f/c/huggingface/hub"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CacheDir(func(k string) string { return tt.env[k] })
			if got != tt.want {
				t.Errorf("CacheDir(%v) = %q, want %q", tt.env, got, tt.want)
			}
		})
	}
}

func TestToken(t *testing.T) {
	home := t.TempDir()
	file := filepath.Join(home, ".cache", "huggingface", "token")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("hf_from_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(other, []byte("  hf_from_path  "), 0o600)
	for _, tc := range []struct {
		env          map[string]string
		token, where string
	}{
		{map[string]string{"HOME": home, "HF_TOKEN": "hf_env", "HUGGING_FACE_HUB_TOKEN": "hf_old"}, "hf_env", "$HF_TOKEN"},
		{map[string]string{"HOME": home, "HUGGING_FACE_HUB_TOKEN": "hf_old"}, "hf_old", "$HUGGING_FACE_HUB_TOKEN"},
		{map[string]string{"HOME": home}, "hf_from_file", file},
		{map[string]string{"HOME": home, "HF_TOKEN_PATH": other}, "hf_from_path", other},
		{map[string]string{"HOME": home, "HF_HOME": t.TempDir()}, "", ""},
		{map[string]string{"HOME": home, "HF_TOKEN_PATH": home}, "", ""}, // a directory is no token
	} {
		tok, where := Token(func(k string) string { return tc.env[k] })
		if tok != tc.token || where != tc.where {
			t.Errorf("%v: token %q from %q, want %q from %q", tc.env, tok, where, tc.token, tc.where)
		}
	}
}
