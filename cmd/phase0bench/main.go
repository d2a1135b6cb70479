// Command phase0bench measures what phase0 promises about speed and prints
// one table: each measurement with its target and verdict. It exits non-zero
// only when something could not be measured; a missed target is reported in
// the table, not in the exit status.
//
// Run it from the repository root after `make build` (bin/phase0 must exist),
// with PHASE0_PYTHON naming the venv's python: `make bench` does both.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// row is one line of the table.
type row struct {
	name, value, target, verdict string
}

// bench collects rows and notes as the measurements run.
type bench struct {
	root   string // repository root (holds bin/phase0, pyshim, worker/testdata)
	phase0 string // absolute path of bin/phase0
	python string // PHASE0_PYTHON, empty when unset
	rows   []row
	notes  []string
	failed bool
}

func (b *bench) add(name, value, target string, ok bool) {
	verdict := "ok"
	if !ok {
		verdict = "MISSED"
	}
	b.rows = append(b.rows, row{name, value, target, verdict})
}

// fail records a measurement that could not be taken.
func (b *bench) fail(name string, err error) {
	b.rows = append(b.rows, row{name, "-", "-", "ERROR"})
	b.notes = append(b.notes, fmt.Sprintf("%s: %v", name, err))
	b.failed = true
}

func (b *bench) note(format string, args ...any) {
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == scanChildArg {
		if err := scanChild(os.Args[2]); err != nil {
			fmt.Fprintf(os.Stderr, "phase0bench %s: %v\n", scanChildArg, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(run())
}

func run() int {
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(os.Stderr, "phase0bench: %v\n", err)
		return 1
	}
	b := &bench{root: root, phase0: filepath.Join(root, "bin", "phase0"), python: os.Getenv("PHASE0_PYTHON")}
	if _, err := os.Stat(b.phase0); err != nil {
		fmt.Fprintf(os.Stderr, "phase0bench: %s is missing (run `make build` from the repository root first): %v\n", b.phase0, err)
		return 1
	}
	if b.python != "" && !filepath.IsAbs(b.python) {
		if abs, err := filepath.Abs(b.python); err == nil {
			b.python = abs
		}
	}

	steps := []struct {
		name      string
		needsPy   bool
		measureFn func(*bench) error
	}{
		{"inventory+gate, 8B sharded", false, (*bench).inventory},
		{"inventory scaling, 291/18k/73k tensors", false, (*bench).inventoryScaling},
		{"scan, 1 GiB bf16", false, (*bench).scan},
		{"loader, Llama-3.2-3B shape", true, (*bench).loader},
		{"Phase 0 at the Llama-3.2-3B shape", true, (*bench).shaped},
		{"quantized gate 1, Llama-3.2-1B shape", true, (*bench).quantGate},
		{"quantized gate 1, real 4B shape, Gemma 3", true, (*bench).quantGemma},
		{"quantized gate 1, real 4B shape, Phi-4-mini", true, (*bench).quantPhi},
		{"baseline overhead", true, (*bench).baseline},
		{"reference recording and compare", true, (*bench).reference},
		{"repeat and fresh run", true, (*bench).rerun},
		{"worker logits round trip", true, (*bench).workerRoundTrip},
		{"bridge logits call (in-process)", true, (*bench).bridgeCall},
		{"triage, 16 hub models", false, (*bench).triage},
	}
	only := os.Getenv("PHASE0_BENCH_ONLY") // a substring of the step names to run, for working on one
	for _, s := range steps {
		if only != "" && !strings.Contains(s.name, only) {
			continue
		}
		fmt.Fprintf(os.Stderr, "phase0bench: measuring %s\n", s.name)
		if s.needsPy && b.python == "" {
			b.fail(s.name, fmt.Errorf("PHASE0_PYTHON is not set"))
			continue
		}
		if err := s.measureFn(b); err != nil {
			b.fail(s.name, err)
		}
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measurement\tvalue\ttarget\tverdict")
	for _, r := range b.rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.name, r.value, r.target, r.verdict)
	}
	tw.Flush()
	for _, n := range b.notes {
		fmt.Println("note: " + n)
	}
	if b.failed {
		return 1
	}
	return 0
}
