package hfcache

import (
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// CacheDir returns the hub cache folder the way huggingface_hub's constants.py
// computes HF_HUB_CACHE:
//
//	HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE (legacy), else HF_HOME/hub,
//	where HF_HOME defaults to $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface.
//
// HF_HOME and the final value go through expanduser and expandvars, as there.
// env is os.Getenv in production; a variable set to "" counts as unset (Python
// would take the empty string literally and cache into the working directory).
func CacheDir(env func(string) string) string {
	hub := env("HF_HUB_CACHE")
	if hub == "" {
		hub = env("HUGGINGFACE_HUB_CACHE")
	}
	if hub == "" {
		hub = filepath.Join(Home(env), "hub")
	}
	return expandVars(expandUser(hub, env), env)
}

// Home is HF_HOME as huggingface_hub computes it: $HF_HOME, else
// $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface, expanded.
func Home(env func(string) string) string {
	hfHome := env("HF_HOME")
	if hfHome == "" {
		base := env("XDG_CACHE_HOME")
		if base == "" {
			base = filepath.Join(homeDir(env), ".cache")
		}
		hfHome = filepath.Join(base, "huggingface")
	}
	return expandVars(expandUser(hfHome, env), env)
}

// TokenPath is where huggingface_hub keeps the login token: $HF_TOKEN_PATH,
// else HF_HOME/token.
func TokenPath(env func(string) string) string {
	if p := env("HF_TOKEN_PATH"); p != "" {
		return expandVars(expandUser(p, env), env)
	}
	return filepath.Join(Home(env), "token")
}

// maxTokenBytes bounds the token file read: real tokens are ~40 bytes.
const maxTokenBytes = 4096

// Token finds the hub token in huggingface_hub's order: $HF_TOKEN, the older
// $HUGGING_FACE_HUB_TOKEN, then the token file. source names where it came
// from ("$HF_TOKEN" or the file's path); both are "" when there is none.
func Token(env func(string) string) (token, source string) {
	for _, name := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if v := strings.TrimSpace(env(name)); v != "" {
			return v, "$" + name
		}
	}
	path := TokenPath(env)
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, maxTokenBytes))
	if v := strings.TrimSpace(string(b)); v != "" {
		return v, path
	}
	return "", ""
}

// homeDir mirrors Python's expanduser("~"): $HOME, else the passwd entry.
func homeDir(env func(string) string) string {
	if h := env("HOME"); h != "" {
		return h
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return "~"
}

// expandUser mirrors posixpath.expanduser for "~" and "~user" prefixes;
// an unknown user leaves the path unchanged, as in Python.
func expandUser(p string, env func(string) string) string {
	if !strings.HasPrefix(p, "~") {
		return p
	}
	name, rest, hasSlash := strings.Cut(p[1:], "/")
	var home string
	if name == "" {
		home = homeDir(env)
	} else {
		u, err := user.Lookup(name)
		if err != nil {
			return p
		}
		home = u.HomeDir
	}
	if !hasSlash {
		return home
	}
	return strings.TrimSuffix(home, "/") + "/" + rest
}

// expandVars mirrors posixpath.expandvars: $name and ${name} are replaced
// when the variable is set, and left as written when it is not.
func expandVars(p string, env func(string) string) string {
	if !strings.Contains(p, "$") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); {
		if p[i] != '$' {
			b.WriteByte(p[i])
			i++
			continue
		}
		var name string
		end := i + 1
		if end < len(p) && p[end] == '{' {
			closing := strings.IndexByte(p[end:], '}')
			if closing < 0 {
				b.WriteString(p[i:])
				break
			}
			name = p[end+1 : end+closing]
			end += closing + 1
		} else {
			for end < len(p) && isWordChar(p[end]) {
				end++
			}
			name = p[i+1 : end]
		}
		if end == i+1 { // a lone "$"
			b.WriteByte('$')
			i++
			continue
		}
		if v := env(name); name != "" && v != "" {
			b.WriteString(v)
		} else {
			b.WriteString(p[i:end])
		}
		i = end
	}
	return b.String()
}
