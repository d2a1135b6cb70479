package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WriteFile writes content to path, creating its folders, or fails the test.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Alive says whether process pid still runs: it exists and is neither a
// zombie nor dead (/proc/<pid>/stat's state, after the last ')' since the
// command name may hold spaces and parentheses).
func Alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z") && !strings.HasPrefix(s[i+1:], " X")
}

// WaitGone waits (bounded: this is about whether, not how fast) for every
// pid to be gone and fails naming those still alive. SIGKILL is delivered
// asynchronously, and the kernel needs a moment to tear a process down.
func WaitGone(t testing.TB, what string, pids map[string]int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var left []string
		for name, pid := range pids {
			if Alive(pid) {
				left = append(left, name+" "+strconv.Itoa(pid))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still running 30 s later: %s", what, strings.Join(left, ", "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
