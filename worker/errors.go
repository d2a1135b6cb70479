package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrTimeout is wrapped by the error Run returns when the context's
	// deadline or Options.Timeout ends the child.
	ErrTimeout = errors.New("worker: timed out")
	// ErrStart is wrapped when the child could not start Python (wrong
	// version, missing venv, bad sys.path entry).
	ErrStart = errors.New("worker: python did not start in the child")
)

// OpError is a Python exception raised by an op, or (Type "BridgeError") a
// value the op returned that could not be passed back.
type OpError struct {
	Op        string
	Type      string
	Message   string
	Traceback string
}

func (e *OpError) Error() string {
	return fmt.Sprintf("worker: op %q raised %s: %s", e.Op, e.Type, e.Message)
}

// CrashError says the child ended before answering: a signal, a non-zero
// exit, or a broken protocol.
type CrashError struct {
	Op         string // the op in flight ("" while starting)
	Cause      string // "killed by signal SIGSEGV", "exit status 3", "killed (likely out of memory)", ...
	StderrTail string // the last ~64 KiB of the child's stdout and stderr
}

func (e *CrashError) Error() string {
	where := "while starting"
	if e.Op != "" {
		where = fmt.Sprintf("during op %q", e.Op)
	}
	msg := fmt.Sprintf("worker: child process %s %s", e.Cause, where)
	if tail := lastLines(e.StderrTail, 15); tail != "" {
		msg += "; last output:\n" + tail
	}
	return msg
}

// TimeoutError is returned when the context's deadline (or Options.Timeout)
// passes; it wraps ErrTimeout and context.DeadlineExceeded.
type TimeoutError struct {
	Op         string
	After      time.Duration // time since the child started
	StderrTail string
}

func (e *TimeoutError) Error() string {
	where := "while starting"
	if e.Op != "" {
		where = fmt.Sprintf("in op %q", e.Op)
	}
	msg := fmt.Sprintf("worker: timed out %s after %s; the child's process group was killed", where, e.After.Round(time.Millisecond))
	if tail := lastLines(e.StderrTail, 5); tail != "" {
		msg += "; last output:\n" + tail
	}
	return msg
}

func (e *TimeoutError) Unwrap() []error { return []error{ErrTimeout, context.DeadlineExceeded} }

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
