package pyenv

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// venv lays out what make leaves: bin/python and, when installed, the stamp.
func venv(t *testing.T, installed bool) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "python"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if installed {
		if err := os.WriteFile(filepath.Join(dir, installedStamp), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestDefaultPythonPrecedence(t *testing.T) {
	made := venv(t, true)
	half := venv(t, false)
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      string
		makeVenv string
		want     string   // the path, or
		wantErr  []string // substrings of the error
	}{
		{"env wins over make", "/opt/b/bin/python", made, "/opt/b/bin/python", nil},
		{"make's venv", "", made, filepath.Join(made, "bin", "python"), nil},
		{"relative env made absolute", "v/bin/python", "", filepath.Join(cwd, "v", "bin", "python"), nil},
		{"not built by make", "", "", "", []string{"not built by make", "--python", EnvPython}},
		{"make's venv unfinished", "", half, "", []string{half, "not installed", "make venv"}},
		{"make's venv gone", "", filepath.Join(made, "gone"), "", []string{"gone", "make venv"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvPython, tc.env)
			defer func(v string) { makeVenv = v }(makeVenv)
			makeVenv = tc.makeVenv
			got, err := DefaultPython()
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("DefaultPython() = %s, want an error", got)
				}
				if !errors.Is(err, ErrNoPython) {
					t.Errorf("error %v does not wrap ErrNoPython", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("DefaultPython() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestLinkerFlag builds a program with the -X flag exactly as the Makefile
// spells it, so renaming the variable or the package cannot silently leave
// `make build` binaries without their venv.
func TestLinkerFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`-X (\S+)=\$\(VENV\)`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("the Makefile has no -X …=$(VENV) linker flag")
	}
	made := venv(t, true)
	bin := filepath.Join(t.TempDir(), "printpython")
	build := exec.Command("go", "build", "-ldflags", "-X "+string(m[1])+"="+made, "-o", bin, "./testdata/printpython")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	run := exec.Command(bin)
	run.Env = append(os.Environ(), EnvPython+"=")
	out, err := run.CombinedOutput()
	if want := filepath.Join(made, "bin", "python") + "\n"; err != nil || string(out) != want {
		t.Fatalf("program built with -X %s=%s printed %q (%v), want %q", m[1], made, out, err, want)
	}
}
