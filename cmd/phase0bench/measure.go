package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"phase0/internal/sttest"
	"phase0/read/model"
)

const (
	inspectRuns   = 5
	inspectWall   = 50 * time.Millisecond
	inspectRSSKiB = 50 << 10 // 50 MiB
)

// childRun is one finished child process.
type childRun struct {
	wall   time.Duration
	maxRSS int64 // KiB on Linux
	stdout []byte
}

// runChild runs argv with the extra environment and working directory,
// returning its wall time, peak RSS and stdout. A non-zero exit is an error
// that carries the tail of stderr.
func runChild(dir string, env []string, argv ...string) (childRun, error) {
	return runChildExit(dir, env, 0, argv...)
}

// runChildExit is runChild accepting the exit status ok as well as 0 (a
// phase0 report whose gates failed exits 1).
func runChildExit(dir string, env []string, ok int, argv ...string) (childRun, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil && (ok == 0 || cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != ok) {
		return childRun{}, fmt.Errorf("%s: %w: %s", filepath.Base(argv[0]), err, tail(errb.String(), 600))
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss
	}
	return childRun{wall: wall, maxRSS: rss, stdout: out.Bytes()}, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// reportStatus reads the top-level "status" of a phase0 --json report.
func reportStatus(out []byte) (string, error) {
	var rep struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return "", fmt.Errorf("report is not JSON: %w (%s)", err, tail(string(out), 200))
	}
	return rep.Status, nil
}

// inventory times `phase0 inspect DIR --json` on a sparse Llama-3.1-8B-shaped
// sharded checkpoint: headers, index, config and the weights gate, no data.
func (b *bench) inventory() error {
	dir, err := os.MkdirTemp("", "phase0bench-8b-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg, err := os.ReadFile(filepath.Join(b.root, "read", "model", "testdata", "configs", "llama-3.1-8b-tf5.json"))
	if err != nil {
		return err
	}
	if err := writeCheckpoint(dir, cfg, 4); err != nil {
		return err
	}

	argv := []string{b.phase0, "inspect", dir, "--json"}
	if _, err := runChild(dir, nil, argv...); err != nil { // warm the binary and the headers in the page cache
		return err
	}
	var walls []time.Duration
	var peak int64
	status := ""
	for range inspectRuns {
		r, err := runChild(dir, nil, argv...)
		if err != nil {
			return err
		}
		if status, err = reportStatus(r.stdout); err != nil {
			return err
		}
		walls = append(walls, r.wall)
		peak = max(peak, r.maxRSS)
	}
	med := median(walls)
	b.add("inventory+gate, 8B sharded (wall, median of 5)", ms(med), "< 50 ms", med < inspectWall)
	b.add("inventory+gate, 8B sharded (peak RSS)", fmt.Sprintf("%.1f MiB", float64(peak)/1024), "< 50 MiB", peak < inspectRSSKiB)
	b.add("inventory+gate, 8B sharded (report status)", status, "PASS", status == "PASS")
	return nil
}

// writeCheckpoint writes configJSON as config.json and a sparse BF16
// checkpoint in the given number of shards holding exactly the tensors the
// config implies (model.ExpectedTensors), so the checkpoint and the gate
// cannot disagree about names or shapes.
func writeCheckpoint(dir string, configJSON []byte, shards int) error {
	raw, err := model.ParseRaw(configJSON)
	if err != nil {
		return err
	}
	a := model.Analyze(raw)
	if a.Config == nil {
		return fmt.Errorf("the bench config was rejected: %+v", a.Rejections)
	}
	specs := model.ExpectedTensors(a.Config)
	ts := make([]sttest.WriteTensor, len(specs))
	for i, s := range specs {
		ts[i] = sttest.WriteTensor{Name: s.Name, DType: "BF16", Shape: s.Shape}
	}
	if err := sttest.WriteSharded(dir, ts, shards); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config.json"), configJSON, 0o644)
}
