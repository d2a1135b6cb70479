package listrun

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"phase0/gate/verdict"
	"phase0/output/report"
)

// rowLog is one list row's progress log. A row that ends before its model
// is found (an id missing from an offline cache: llms_dir and python pass,
// reuse has nothing, resolve fails) says so in two lines, not seven: a list of
// 1,000 missing ids writes two short lines for each. Its lines are held until the
// row shows more than that — a stage beyond those, or any other line (a
// download's progress, a worker's log) — and from then on they stream as
// they come, the held ones first.
type rowLog struct {
	out io.Writer

	mu        sync.Mutex
	held      bytes.Buffer
	released  bool
	stageLine bool // the next write is the line of a stage that keeps the row held
}

// quietStage says whether sg is a stage a row that ends at a missing model
// passes through: its line alone does not release the row's lines.
func quietStage(sg report.Stage) bool {
	switch sg.Name {
	case "llms_dir", "python":
		return sg.Status == verdict.Pass
	case "reuse":
		return sg.Status != verdict.Pass // nothing reused: the run goes on
	case "resolve":
		return sg.Status == verdict.Error
	}
	return false
}

// stage is told of each stage just before its line is written.
func (l *rowLog) stage(sg report.Stage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return
	}
	if quietStage(sg) {
		l.stageLine = true
		return
	}
	l.releaseLocked()
}

func (l *rowLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.released && (l.stageLine || l.held.Len() == 0) {
		// The row's first line (its number) and a quiet stage's line wait.
		l.stageLine = false
		return l.held.Write(p)
	}
	l.releaseLocked()
	return l.out.Write(p)
}

func (l *rowLog) releaseLocked() {
	if l.released {
		return
	}
	l.released = true
	l.out.Write(l.held.Bytes()) // a progress log (stderr): nothing to do on failure
	l.held.Reset()
}

// end writes the row's last line: its status and time, after the lines
// that streamed, else after the row's first line alone, with the error's
// kind (the table says the error in full) standing for the held lines.
func (l *rowLog) end(prefix string, r *report.Report) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		fmt.Fprintf(l.out, "%s: %s in %.1fs\n", prefix, r.Status, r.Seconds)
		return
	}
	first, _, _ := bytes.Cut(l.held.Bytes(), []byte("\n"))
	line := fmt.Sprintf("%s\n%s: %s in %.1fs", first, prefix, r.Status, r.Seconds)
	if r.ErrorKind != "" {
		line += ", " + string(r.ErrorKind)
	}
	fmt.Fprintln(l.out, line)
	l.held.Reset()
}
