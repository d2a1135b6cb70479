package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"phase0/python/bridge"
)

var (
	// ErrTimeout is wrapped by the error of a session that Options.Timeout
	// or the context's deadline ended.
	ErrTimeout = errors.New("worker: timed out")
	// ErrStart is wrapped when the child could not start Python (wrong
	// version, missing venv, bad sys.path entry).
	ErrStart = errors.New("worker: python did not start in the child")
)

// Kind says how a call or a session went wrong.
type Kind string

const (
	KindRaised     Kind = "raised"      // the op raised a Python exception; the session lives on
	KindCrashed    Kind = "crashed"     // the child died: a signal, an exit, a broken protocol
	KindTimedOut   Kind = "timed_out"   // the deadline passed; the process group was killed
	KindCancelled  Kind = "cancelled"   // the caller's context ended (Ctrl-C); the group was killed
	KindNotStarted Kind = "not_started" // the child or Python in it never came up
)

// Error is the one error type of this package: a Python exception travels
// as Py (the bridge's own type, unchanged over the pipe), everything else as
// a Kind with its cause and the tail of what the child printed.
type Error struct {
	Op    string          // the op in flight ("" while starting)
	Kind  Kind            //
	Py    *bridge.PyError // the exception, for KindRaised (and a fatal start)
	Cause string          // "killed by signal SIGSEGV", "exit status 3", …
	After time.Duration   // time since the child started
	Tail  string          // the last ~64 KiB of the child's stdout and stderr
	Err   error           // ErrTimeout, ErrStart, context.Canceled, or an OS error
}

func (e *Error) Error() string {
	where := "while starting"
	if e.Op != "" {
		where = fmt.Sprintf("in op %q", e.Op)
	}
	var msg string
	switch e.Kind {
	case KindRaised:
		return fmt.Sprintf("worker: op %q raised %s: %s", e.Op, e.Py.Type, e.Py.Message)
	case KindTimedOut:
		msg = fmt.Sprintf("worker: timed out %s after %s; the child's process group was killed", where, e.After.Round(time.Millisecond))
	case KindCancelled:
		msg = fmt.Sprintf("worker: cancelled %s (%v); the child's process group was killed", where, e.Err)
	case KindNotStarted:
		msg = "worker: " + e.Cause
		if e.Err != nil && !errors.Is(e.Err, ErrStart) {
			msg += ": " + e.Err.Error()
		}
	default:
		msg = fmt.Sprintf("worker: child process %s %s", e.Cause, strings.Replace(where, "in op", "during op", 1))
	}
	if tail := lastLines(e.Tail, 15); tail != "" {
		msg += "; last output:\n" + tail
	}
	return msg
}

// Unwrap exposes ErrTimeout / ErrStart / the context's error, and the Python
// exception, to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	var out []error
	if e.Err != nil {
		out = append(out, e.Err)
	}
	if e.Kind == KindTimedOut {
		out = append(out, context.DeadlineExceeded)
	}
	if e.Py != nil {
		out = append(out, e.Py)
	}
	return out
}

// Reasons describes the error for a report: the cause first, then the
// traceback or the last lines the child printed. Never a Go stack.
func (e *Error) Reasons() []string {
	switch e.Kind {
	case KindRaised:
		out := []string{fmt.Sprintf("%s raised %s: %s", e.Op, e.Py.Type, e.Py.Message)}
		if e.Py.Traceback != "" {
			out = append(out, "traceback:\n"+lastLines(e.Py.Traceback, 30))
		}
		return out
	case KindTimedOut:
		return withTail(fmt.Sprintf("the Python worker timed out after %s in %s (raise --timeout); its process group was killed", e.After.Round(time.Second), opOr(e.Op)), e.Tail)
	case KindCancelled:
		return []string{fmt.Sprintf("interrupted in %s; the Python worker's process group was killed", opOr(e.Op))}
	case KindNotStarted:
		return withTail("the Python worker did not start: "+e.Cause, e.Tail)
	}
	return withTail(fmt.Sprintf("the Python worker %s in %s", e.Cause, opOr(e.Op)), e.Tail)
}

func opOr(op string) string {
	if op == "" {
		return "start-up"
	}
	return op
}

func withTail(first, tail string) []string {
	if t := lastLines(tail, 30); t != "" {
		return []string{first, "last output:\n" + t}
	}
	return []string{first}
}

func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + "…"
		}
	}
	return strings.Join(lines, "\n")
}
