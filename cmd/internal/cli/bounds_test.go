package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childMemoryKiB is the address-space limit (ulimit -v) of the phase0 child
// in TestBoundedInputs: an unbounded read or allocation fails there instead
// of exhausting the machine.
const childMemoryKiB = 2 << 20 // 2 GiB

// runLimited runs `phase0 args…` as a child of this test binary under
// ulimit -v, with a bound on its run time so a hang is a failure, not a
// stuck test.
func runLimited(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := `ulimit -v ` + itoa(childMemoryKiB) + ` && exec "$0" "$@"`
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, os.Args[0]}, args...)...)
	cmd.Env = append(os.Environ(), envAsMain+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("phase0 %v did not finish within 2 minutes (a hang); stderr:\n%s", args, errb.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestBoundedInputs (issue 10 items 2, 7 and 9): absurd counts, endless
// devices, named pipes and oversized files are refused with their exit code,
// one JSON object of bounded size, a message naming the file or field, and
// no Go runtime trace, in a child that could not survive an unbounded
// allocation.
func TestBoundedInputs(t *testing.T) {
	configOnly := func(config string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	layers := func(n string) string {
		return configOnly(strings.Replace(tinyLlama, `"num_hidden_layers": 2`, `"num_hidden_layers": `+n, 1))
	}
	// The largest accepted layer count, with the weights of a 2-layer model:
	// 73k tensors missing, listed up to the cap.
	manyMissing := writeModel(t, tinyLlama)
	os.WriteFile(filepath.Join(manyMissing, "config.json"), []byte(strings.Replace(tinyLlama, `"num_hidden_layers": 2`, `"num_hidden_layers": 8192`, 1)), 0o644)

	symlinked := func(name, target string) string {
		dir := writeModel(t, tinyLlama)
		os.Remove(filepath.Join(dir, name))
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	fifo := func(name string) string {
		dir := writeModel(t, tinyLlama)
		os.Remove(filepath.Join(dir, name))
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		return dir
	}
	hugeConfig := configOnly(strings.Replace(tinyLlama, `"torch_dtype"`, `"padding": "`+strings.Repeat("x", 5<<20)+`", "torch_dtype"`, 1))
	hugeYAML := filepath.Join(t.TempDir(), "huge.yaml")
	os.WriteFile(hugeYAML, []byte("prompt: "+strings.Repeat("y", 2<<20)+"\n"), 0o644)
	good := writeModel(t, tinyLlama)

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"2^31-1 layers", []string{"inspect", layers("2147483647")}, 1, "n_layers is 2147483647, above the sane limit 8192"},
		{"1e5 layers", []string{"inspect", layers("100000")}, 1, "n_layers is 100000, above the sane limit 8192"},
		{"1e6 layers", []string{"inspect", layers("1000000")}, 1, "n_layers is 1000000, above the sane limit 8192"},
		{"huge vocab", []string{"inspect", configOnly(strings.Replace(tinyLlama, `"vocab_size": 512`, `"vocab_size": 4294967296`, 1))}, 1, "vocab_size"},
		{"8192 layers, 2 present", []string{"inspect", manyMissing}, 1, `"findings_omitted": 73510`},
		{"config.json is /dev/zero", []string{"inspect", symlinked("config.json", "/dev/zero")}, 2, "config.json is not a regular file"},
		{"index is /dev/urandom", []string{"inspect", symlinked("model.safetensors.index.json", "/dev/urandom")}, 1, "model.safetensors.index.json"},
		{"shard is /dev/zero", []string{"inspect", symlinked("model.safetensors", "/dev/zero")}, 1, "model.safetensors"},
		{"config.json is a FIFO", []string{"inspect", fifo("config.json")}, 2, "config.json is not a regular file"},
		{"shard is a FIFO", []string{"inspect", fifo("model.safetensors"), "--scan"}, 1, "model.safetensors"},
		{"config.json of 5 MiB", []string{"inspect", hugeConfig}, 2, "config.json is larger than"},
		{"--config /dev/urandom", []string{"inspect", good, "--config", "/dev/urandom"}, 2, "/dev/urandom is not a regular file"},
		{"--config of 2 MiB", []string{"inspect", good, "--config", hugeYAML}, 2, "is larger than"},
		// issue 30: 2^31 scan workers died with "fatal error: runtime: out of memory".
		{"--workers 2^31", []string{"inspect", good, "--scan", "--workers", "2147483648"}, 2, jsonText(`--workers: "2147483648" is not a base-10 integer in [0, 1024]`)},
		{"--workers 1e8", []string{"inspect", good, "--scan", "--workers", "100000000"}, 2, jsonText(`--workers: "100000000" is not a base-10 integer in [0, 1024]`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runLimited(t, append(tc.args, "--json")...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%.2000s", code, tc.code, stderr)
			}
			dec := json.NewDecoder(strings.NewReader(stdout))
			var rep map[string]any
			if err := dec.Decode(&rep); err != nil {
				t.Fatalf("stdout is not a JSON object: %v\n%.2000s", err, stdout)
			}
			if dec.More() {
				t.Errorf("more than one JSON value on stdout")
			}
			if len(stdout) > 1<<20 {
				t.Errorf("the report is %d bytes; finding lists must be capped", len(stdout))
			}
			if !strings.Contains(stdout, tc.want) {
				t.Errorf("the report does not say %q:\n%.3000s", tc.want, stdout)
			}
			for _, trace := range []string{"goroutine ", "panic:", "fatal error:", "runtime."} {
				if strings.Contains(stderr, trace) {
					t.Errorf("stderr holds a trace (%q):\n%.2000s", trace, stderr)
				}
			}
		})
	}
}

// TestMessagesAreBounded (issue 36 item 10): a 10 MB model argument, list
// line, flag value or path gave a message (and a report) twice its size.
// Every one is now refused or named cut: stdout and stderr stay a few KiB.
func TestMessagesAreBounded(t *testing.T) {
	big := strings.Repeat("x", 10<<20)
	list := filepath.Join(t.TempDir(), "models.txt")
	if err := os.WriteFile(list, []byte("# a pasted blob\n"+big+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := writeModel(t, tinyLlama)
	for _, args := range [][]string{
		{"inspect", big},
		{"inspect", "org/" + big, "--json"},
		{"run", big},
		{"baseline", big},
		{"inspect", "@" + big},
		{"inspect", "@" + list},
		{"inspect", good, "--shard", big},
		{"inspect", good, "--junit", "/tmp/" + big},
		{"inspect", good, "--workers", big},
		{"inspect", good, "--cache", big},
		{"reference", good, "--dtype", big},
		{"reference", good, "--out", big},
		{"run", good, "--out-dir", big, "--json"},
	} {
		code, stdout, stderr := run(t, args...)
		if code != 2 || len(stdout) > 16<<10 || len(stderr) > 16<<10 || !strings.HasPrefix(stderr, "phase0: ") {
			t.Errorf("%s … (%d arguments): exit %d, stdout %d bytes, stderr %d bytes: %.300s", args[0], len(args), code, len(stdout), len(stderr), stderr)
		}
	}
}
