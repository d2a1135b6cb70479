package bridge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// pythonEnv is what Start learns about a python before initializing it.
type pythonEnv struct {
	version       string // "3.11"
	versionSource string // where version came from, for messages
	venv          string // the venv directory, "" when the python is not in a venv
}

var majorMinor = regexp.MustCompile(`^\s*(\d+)\.(\d+)`)

// inspectPython finds the major.minor of exe without initializing anything:
// from the venv's pyvenv.cfg (the file CPython itself reads to find the venv)
// when there is one, otherwise by running exe.
func inspectPython(exe string) (pythonEnv, error) {
	info, err := os.Stat(exe)
	if err != nil {
		return pythonEnv{}, fmt.Errorf("bridge: python executable: %w", err)
	}
	if info.IsDir() {
		return pythonEnv{}, fmt.Errorf("bridge: python executable %s is a directory", exe)
	}
	// CPython looks for pyvenv.cfg next to the executable and one level up.
	binDir := filepath.Dir(exe)
	for _, dir := range []string{binDir, filepath.Dir(binDir)} {
		cfg := filepath.Join(dir, "pyvenv.cfg")
		v, err := pyvenvVersion(cfg)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return pythonEnv{}, err
		}
		return pythonEnv{version: v, versionSource: cfg, venv: dir}, nil
	}
	v, err := runVersion(exe)
	if err != nil {
		return pythonEnv{}, err
	}
	return pythonEnv{version: v, versionSource: "running it"}, nil
}

// pyvenvVersion reads "version" (venv) or "version_info" (uv, virtualenv).
func pyvenvVersion(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("bridge: reading %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "version", "version_info":
			m := majorMinor.FindStringSubmatch(value)
			if m == nil {
				return "", fmt.Errorf("bridge: %s: version %q is not major.minor[.patch]", path, strings.TrimSpace(value))
			}
			return m[1] + "." + m[2], nil
		}
	}
	return "", fmt.Errorf("bridge: %s has no version or version_info key", path)
}

func runVersion(exe string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("bridge: asking %s for its version: %w: %s", exe, err, strings.TrimSpace(stderr.String()))
	}
	m := majorMinor.FindStringSubmatch(string(out))
	if m == nil {
		return "", fmt.Errorf("bridge: %s reported version %q, want major.minor", exe, strings.TrimSpace(string(out)))
	}
	return m[1] + "." + m[2], nil
}

func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}
