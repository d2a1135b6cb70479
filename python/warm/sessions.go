// Package warm lends runs live Python worker sessions, so a process that
// runs many models starts torch once per session instead of once per run.
package warm

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"phase0/python/ops"
	"phase0/python/worker"
)

// Sessions lends runs warm Python sessions, so a process that runs many models
// (a `run @FILE` list, a program calling the Python API again and again, the
// tests) starts torch once per session instead of once per run. A run borrows
// a session at its first Python stage, resets it (op reset_session: the
// modules it imported from outside the interpreter's own folders are
// forgotten, sys.path is restored) and has it to itself until the run ends.
// A session is only lent again for the same interpreter, shim folder and
// environment it was started with. Each loan has its own limits: the
// borrower's context ending, or the loan's Timeout passing, kills the
// session, and the run's call reports it as a session of its own would
// (cancelled, timed out). A session whose child died, timed out or was
// cancelled is closed instead of going back; an idle one is closed after
// the lender's idle limit. Safe for concurrent runs: each gets its own
// session, and at most n sessions exist at once.
type Sessions struct {
	loans     chan struct{} // one token per session out on loan
	idleLimit time.Duration // 0: idle sessions live until Close
	mu        sync.Mutex
	idle      []*lentSession
}

// Loan is what a borrower asks of a session.
type Loan struct {
	Python  string        // the interpreter's absolute path
	Shim    string        // the folder holding phase0_shim
	Log     io.Writer     // receives the session's output while the loan lasts
	Timeout time.Duration // the loan's time limit; 0 for none (the context still applies)
}

type lentSession struct {
	owner  *Sessions
	sess   *worker.Session
	broken bool   // a call ended the session (crash, time-out, cancellation)
	key    string // interpreter, shim folder and environment it was started with
	stderr *switchWriter
	unbind func() bool // unties the loan's context from the session
	cancel func()      // releases the loan's context
	expiry *time.Timer // closes the session once idle too long
}

// New returns a lender of at most n concurrent sessions (at least 1).
// idle > 0 closes a session that nobody borrowed for that long (a process
// that lives on between runs does not keep torch's memory forever); 0
// keeps idle sessions until Close.
func New(n int, idle time.Duration) *Sessions {
	return &Sessions{loans: make(chan struct{}, max(n, 1)), idleLimit: idle}
}

// Close ends every idle session; call it once no run is borrowing.
func (w *Sessions) Close() {
	w.mu.Lock()
	idle := w.idle
	w.idle = nil
	w.mu.Unlock()
	for _, l := range idle {
		l.stopExpiry()
		l.sess.Close()
	}
}

// ErrWaiting marks a borrower whose context ended while it waited for a
// session (errors.Is).
var ErrWaiting = errors.New("waiting for a Python session")

// Borrow hands the run a reset session for the loan's interpreter and shim
// folder, started in this process's current environment, starting one when
// none is idle; it waits while n sessions are out on loan. The loan (its
// context, its Timeout) starts before the reset, as a new session's limit
// starts before torch is imported. Its Close ends the loan.
func (w *Sessions) Borrow(ctx context.Context, loan Loan) (ops.Session, error) {
	select {
	case w.loans <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrWaiting, context.Cause(ctx))
	}
	key := sessionKey(loan)
	for {
		l := w.takeIdle(key)
		if l == nil {
			break
		}
		w.lend(ctx, l, loan)
		reset := ops.New(func(context.Context) (ops.Session, error) { return l.sess, nil })
		if _, err := reset.ResetSession(ctx); err != nil {
			// Whatever went wrong, this session is not lent again.
			l.endLoan()
			l.sess.Close()
			if ctx.Err() != nil {
				<-w.loans
				return nil, err
			}
			continue
		}
		return l, nil
	}
	l := &lentSession{owner: w, key: key, stderr: &switchWriter{}}
	// Not the run's context: the session outlives the run (lend ties the
	// two while the loan lasts).
	var err error
	l.sess, err = worker.Start(context.Background(), worker.Options{Python: loan.Python, ExtraPath: []string{loan.Shim}, Stderr: l.stderr}, ops.Module)
	if err != nil {
		<-w.loans
		return nil, err
	}
	w.lend(ctx, l, loan)
	return l, nil
}

// callerOnly are variables that describe only the calling process, which
// Python in the worker never reads: pytest sets PYTEST_CURRENT_TEST to each
// test's name, a shell sets _ to the last command.
var callerOnly = []string{"PYTEST_CURRENT_TEST", "_"}

// sessionKey is what a session must share with a loan to serve it: the
// interpreter, the shim folder and the whole environment but callerOnly
// (HF_HOME, HF_HUB_OFFLINE, PYTHONPATH… are read when Python and its
// imports start, and a session keeps torch's and transformers' imports).
func sessionKey(loan Loan) string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(callerOnly, k)
	})
	slices.Sort(env)
	h := sha256.New()
	for _, part := range append([]string{loan.Python, loan.Shim}, env...) {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return string(h.Sum(nil))
}

// lend ties the loan's limits to the session until it goes back.
func (w *Sessions) lend(ctx context.Context, l *lentSession, loan Loan) {
	l.broken = false
	l.stderr.set(loan.Log)
	l.cancel = func() {}
	if loan.Timeout > 0 {
		ctx, l.cancel = context.WithTimeout(ctx, loan.Timeout)
	}
	l.unbind = l.sess.Bind(ctx)
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

// takeIdle removes and returns an idle session with key. An idle session
// of another key is closed when it is the only kind left, so the sessions
// never outnumber the loans' limit.
func (w *Sessions) takeIdle(key string) *lentSession {
	w.mu.Lock()
	var stale *lentSession
	defer func() {
		w.mu.Unlock()
		if stale != nil {
			stale.sess.Close()
		}
	}()
	for i, l := range w.idle {
		if l.key == key {
			w.idle = slices.Delete(w.idle, i, i+1)
			l.stopExpiry()
			return l
		}
	}
	if n := len(w.idle); n > 0 && n+len(w.loans) > cap(w.loans) {
		stale = w.idle[0]
		stale.stopExpiry()
		w.idle = w.idle[1:]
	}
	return nil
}

// giveBack ends a loan: a healthy session goes idle, a broken one (or one
// whose loan's context ended) is closed.
func (w *Sessions) giveBack(l *lentSession, healthy bool) {
	if bound := l.endLoan(); !bound || !healthy {
		l.sess.Close()
	} else {
		w.mu.Lock()
		w.idle = append(w.idle, l)
		if w.idleLimit > 0 {
			l.expiry = time.AfterFunc(w.idleLimit, func() { w.expire(l) })
		}
		w.mu.Unlock()
	}
	<-w.loans
}

// endLoan unties the loan's limits and output from the session; it says
// whether the loan's context was still bound (had not ended it).
func (l *lentSession) endLoan() (bound bool) {
	l.stderr.set(nil)
	bound = l.unbind()
	l.cancel()
	return bound
}

// expire closes l if it is still idle.
func (w *Sessions) expire(l *lentSession) {
	w.mu.Lock()
	i := slices.Index(w.idle, l)
	if i >= 0 {
		w.idle = slices.Delete(w.idle, i, i+1)
	}
	w.mu.Unlock()
	if i >= 0 {
		l.sess.Close()
	}
}

// stopExpiry cancels the idle limit of a session leaving the idle list
// (called with w.mu held; an expire already under way finds it gone).
func (l *lentSession) stopExpiry() {
	if l.expiry != nil {
		l.expiry.Stop()
		l.expiry = nil
	}
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
