package wslock

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A child copy of this test binary holds the lock until its stdin closes.
func TestMain(m *testing.M) {
	if path := os.Getenv("WSLOCK_TEST_HOLD"); path != "" {
		l, err := Acquire(path, Self(time.Now()))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		fmt.Println("held")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		if err := l.Release(); err != nil {
			os.Exit(4)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holdInChild starts a child process holding path's lock.
func holdInChild(t *testing.T, path string) (*exec.Cmd, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WSLOCK_TEST_HOLD="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "held\n" {
		cmd.Process.Kill()
		t.Fatalf("child did not take the lock: %q, %v", line, err)
	}
	return cmd, func() { stdin.Close() }
}

func TestSecondProcessIsRefusedAndToldWhoHolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".phase0.lock")
	child, release := holdInChild(t, path)

	_, err := Acquire(path, Self(time.Now()))
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("Acquire while a child holds it: %v, want ErrHeld", err)
	}
	if want := fmt.Sprintf("pid %d (", child.Process.Pid); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), os.Args[0]) {
		t.Errorf("error %q does not name the holder (%s and its command)", err, want)
	}

	release()
	if err := child.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	l, err := Acquire(path, Self(time.Now()))
	if err != nil {
		t.Fatalf("Acquire after the holder released: %v", err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), fmt.Sprintf(`"pid":%d`, os.Getpid())) {
		t.Errorf("lock file does not record this process: %s", b)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// A holder killed with SIGKILL releases the lock with its death.
func TestKilledHolderReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".phase0.lock")
	child, _ := holdInChild(t, path)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	l, err := Acquire(path, Self(time.Now()))
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	l.Release()
}

func TestNonRegularLockFileRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".phase0.lock")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), path); err != nil {
		t.Fatal(err)
	}
	if _, err := Acquire(path, Self(time.Now())); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("symlink lock file: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); err == nil {
		t.Error("the symlink's target was created")
	}
}
