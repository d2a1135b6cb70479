// Package warm lends runs live Python worker sessions, so a process that
// runs many models starts torch once per session instead of once per run.
package warm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"phase0/python/ops"
	"phase0/python/worker"
)

// Sessions lends runs warm Python sessions, so a process that runs many models
// (the tests; a program embedding the orchestrator) starts torch once per
// session instead of once per run. A run given orchestrator's Settings.Sessions borrows a
// session at its first Python stage, resets it (op reset_session: the
// modules it imported from outside the interpreter's own folders are
// forgotten, sys.path is restored) and has it to itself until the run ends;
// a session whose child died, timed out or was cancelled is closed instead
// of going back. Lent sessions have no whole-session time limit
// (orchestrator's Settings.Timeout does not apply); the run's context ending kills the
// session. Safe for concurrent runs: each gets its own session, and at most
// n sessions exist at once.
type Sessions struct {
	loans chan struct{} // one token per session out on loan
	mu    sync.Mutex
	idle  []*lentSession
}

type lentSession struct {
	owner  *Sessions
	sess   *worker.Session
	broken bool // a call ended the session (crash, time-out, cancellation)
	python string
	shim   string
	stderr *switchWriter
	stop   func() bool // unregisters the kill on the borrower's context
}

// New returns a lender of at most n concurrent sessions (at least 1).
func New(n int) *Sessions {
	return &Sessions{loans: make(chan struct{}, max(n, 1))}
}

// Close ends every idle session; call it once no run is borrowing.
func (w *Sessions) Close() {
	w.mu.Lock()
	idle := w.idle
	w.idle = nil
	w.mu.Unlock()
	for _, l := range idle {
		l.sess.Close()
	}
}

// ErrWaiting marks a borrower whose context ended while it waited for a
// session (errors.Is).
var ErrWaiting = errors.New("waiting for a Python session")

// Borrow hands the run a reset session for interpreter py and shim folder
// shim, starting one when none is idle; it waits while n sessions are out
// on loan. The session's output goes to progress while the loan lasts; its
// Close ends the loan.
func (w *Sessions) Borrow(ctx context.Context, py, shim string, progress io.Writer) (ops.Session, error) {
	select {
	case w.loans <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrWaiting, context.Cause(ctx))
	}
	for {
		l := w.takeIdle(py, shim)
		if l == nil {
			break
		}
		reset := ops.New(func(context.Context) (ops.Session, error) { return l.sess, nil })
		if _, err := reset.ResetSession(ctx); err != nil {
			l.sess.Close()
			continue
		}
		w.lend(ctx, l, progress)
		return l, nil
	}
	l := &lentSession{owner: w, python: py, shim: shim, stderr: &switchWriter{}}
	// Not the run's context: the session outlives the run (lend ties the
	// two while the loan lasts).
	var err error
	l.sess, err = worker.Start(context.Background(), worker.Options{Python: py, ExtraPath: []string{shim}, Stderr: l.stderr}, ops.Module)
	if err != nil {
		<-w.loans
		return nil, err
	}
	w.lend(ctx, l, progress)
	return l, nil
}

func (w *Sessions) lend(ctx context.Context, l *lentSession, progress io.Writer) {
	l.broken = false
	l.stderr.set(progress)
	l.stop = context.AfterFunc(ctx, func() { l.sess.Close() })
}

// Call runs an op in the lent session and notes whether the error, if any,
// ended it (ops.Session).
func (l *lentSession) Call(op string, args, out any) ([]float32, error) {
	floats, err := l.sess.Call(op, args, out)
	if brokenSession(err) {
		l.broken = true
	}
	return floats, err
}

// Close ends the loan (ops.Session): the session goes back to its lender.
func (l *lentSession) Close() error {
	l.owner.giveBack(l, !l.broken)
	return nil
}

// takeIdle removes and returns an idle session for python and shim. An idle
// session for another interpreter is closed when it is the only kind left,
// so the sessions never outnumber the loans' limit.
func (w *Sessions) takeIdle(python, shim string) *lentSession {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, l := range w.idle {
		if l.python == python && l.shim == shim {
			w.idle = append(w.idle[:i], w.idle[i+1:]...)
			return l
		}
	}
	if n := len(w.idle); n > 0 && n+len(w.loans) > cap(w.loans) {
		w.idle[0].sess.Close()
		w.idle = w.idle[1:]
	}
	return nil
}

// giveBack ends a loan: a healthy session goes idle, a broken one (or one
// whose borrower's context ended) is closed.
func (w *Sessions) giveBack(l *lentSession, healthy bool) {
	l.stderr.set(nil)
	if !l.stop() || !healthy {
		l.sess.Close()
	} else {
		w.mu.Lock()
		w.idle = append(w.idle, l)
		w.mu.Unlock()
	}
	<-w.loans
}

// brokenSession says whether a call's error ended the session: a Python
// exception leaves it usable, anything else (a crash, a time-out, a
// cancellation) does not.
func brokenSession(err error) bool {
	if err == nil {
		return false
	}
	var we *worker.Error
	return !errors.As(err, &we) || we.Kind != worker.KindRaised
}

// switchWriter forwards a lent session's output to the run that has it.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return len(p), nil
	}
	if _, err := s.w.Write(p); err != nil {
		return 0, fmt.Errorf("progress output: %w", err)
	}
	return len(p), nil
}
