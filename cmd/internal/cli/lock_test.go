package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"phase0/internal/testenv"
)

// phase0Cmd is a real phase0 process (this test binary acting as main).
func phase0Cmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "PHASE0_TEST_AS_MAIN=1", "PHASE0_PYSHIM="+testenv.PyShim())
	return cmd
}

// TestSecondRunOnALockedWorkspace: two real phase0 processes on one
// workspace. The first holds it, suspended as by Ctrl-Z (SIGTSTP) once it
// has generated the workspace, before torch is imported; the second exits
// 2 at once with one JSON object naming the first's pid, and changes
// nothing. The first, continued and stopped (SIGTERM), leaves the lock
// naming no holder.
func TestSecondRunOnALockedWorkspace(t *testing.T) {
	py := testenv.Python(t)
	model := filepath.Join(testenv.TinyModels(t), "qwen3")
	llms := t.TempDir()
	testenv.CopyTestData(t, filepath.Join(llms, "verify"), "llms/verify")
	args := []string{"run", model, "--llms-dir", llms, "--name", "locked_model", "--python", py, "--json", "--timeout", "5m"}

	first := phase0Cmd(args...)
	stderr, err := first.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var firstOut bytes.Buffer
	first.Stdout = &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		first.Process.Kill()
		first.Wait()
	}()
	// The first run holds the lock from "generate" on: suspend it there.
	sc := bufio.NewScanner(stderr)
	var progress []string
	for sc.Scan() {
		progress = append(progress, sc.Text())
		if strings.HasPrefix(sc.Text(), "phase0: generate") {
			break
		}
	}
	if len(progress) == 0 || !strings.HasPrefix(progress[len(progress)-1], "phase0: generate") {
		t.Fatalf("the first run did not generate the workspace:\n%s", strings.Join(progress, "\n"))
	}
	if err := first.Process.Signal(syscall.SIGTSTP); err != nil {
		t.Fatal(err)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	ws := filepath.Join(llms, "locked_model")
	before := map[string][]byte{}
	for _, f := range []string{"locked_model_weights.py", "TODO.md", ".phase0-manifest.json"} {
		before[f], _ = os.ReadFile(filepath.Join(ws, f))
	}

	second := phase0Cmd(args...)
	var out, errb bytes.Buffer
	second.Stdout, second.Stderr = &out, &errb
	start := time.Now()
	err = second.Run()
	took := time.Since(start)
	code := second.ProcessState.ExitCode()
	var rep struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	dec := json.NewDecoder(&out)
	if decErr := dec.Decode(&rep); decErr != nil || dec.More() {
		t.Fatalf("second run: stdout is not one JSON object (%v):\n%s\nstderr:\n%s", decErr, out.String(), errb.String())
	}
	if code != 2 || rep.Status != "ERROR" {
		t.Fatalf("second run: exit %d (%v), status %s; want 2, ERROR:\n%s", code, err, rep.Status, rep.Error)
	}
	for _, want := range []string{fmt.Sprintf("pid %d (", first.Process.Pid), filepath.Join(ws, ".phase0.lock"), "locked by another phase0 run", " run " + model} {
		if !strings.Contains(rep.Error, want) {
			t.Errorf("second run's error %q does not say %q", rep.Error, want)
		}
	}
	for f, b := range before {
		if now, _ := os.ReadFile(filepath.Join(ws, f)); !bytes.Equal(now, b) {
			t.Errorf("the refused second run changed %s", f)
		}
	}
	t.Logf("second run refused after %v", took)

	// SIGTERM waits while the first is stopped; SIGCONT lets it act on it.
	if err := first.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	if c := first.ProcessState.ExitCode(); c != 130 {
		t.Errorf("first run: exit %d, want 130 (interrupted)\n%s", c, firstOut.String())
	}
	if b, _ := os.ReadFile(filepath.Join(ws, ".phase0.lock")); len(b) != 0 {
		t.Errorf("the lock file still names a holder after the run: %s", b)
	}
}
