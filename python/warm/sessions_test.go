package warm

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"phase0/internal/testenv"
	"phase0/python/ops/opstest"
	"phase0/python/worker"
)

// The lender starts workers by re-executing this test binary.
func TestMain(m *testing.M) { os.Exit(opstest.Main(m)) }

func loanFor(t *testing.T) Loan {
	t.Helper()
	return Loan{Python: testenv.Python(t), Shim: testenv.PyShim()}
}

// borrow borrows a session and checks it answers; it returns the session
// and its child's pid.
func borrow(t *testing.T, w *Sessions, loan Loan) (*lentSession, int) {
	t.Helper()
	s, err := w.Borrow(context.Background(), loan)
	if err != nil {
		t.Fatal(err)
	}
	l := s.(*lentSession)
	var env map[string]any
	if _, err := l.Call("environment", nil, &env); err != nil {
		t.Fatalf("a lent session does not answer: %v", err)
	}
	return l, l.sess.Pid()
}

// TestLoans: a healthy session goes back and is lent again (the same
// child); a changed environment gets a session of its own; a loan's time
// limit ends the session as a time-out, after which the next loan gets a
// new child; an idle session is closed after the idle limit.
func TestLoans(t *testing.T) {
	w := New(1, 0)
	defer w.Close()
	loan := loanFor(t)

	l, first := borrow(t, w, loan)
	l.Close()
	l, again := borrow(t, w, loan)
	l.Close()
	if again != first {
		t.Errorf("a healthy session was not lent again: child %d, then %d", first, again)
	}

	t.Setenv("PYTEST_CURRENT_TEST", "only the caller's")
	l, same := borrow(t, w, loan)
	l.Close()
	if same != first {
		t.Errorf("PYTEST_CURRENT_TEST changed the session: child %d, then %d", first, same)
	}
	t.Setenv("HF_HUB_OFFLINE", "1")
	l, other := borrow(t, w, loan)
	l.Close()
	if other == first {
		t.Errorf("a session started without HF_HUB_OFFLINE was lent to a run with it (child %d)", first)
	}
	if testenv.Alive(first) {
		// One session at most: the idle one of the old environment made room.
		testenv.WaitGone(t, "the idle session of the old environment", map[string]int{"session": first})
	}

	short := loan
	short.Timeout = time.Millisecond
	s, err := w.Borrow(context.Background(), short)
	if err == nil {
		_, err = s.Call("environment", nil, nil)
		s.Close()
	}
	var we *worker.Error
	if !errors.As(err, &we) || we.Kind != worker.KindTimedOut || !errors.Is(err, worker.ErrTimeout) {
		t.Fatalf("a loan past its time limit: %v, want a time-out", err)
	}
	testenv.WaitGone(t, "the timed-out session", map[string]int{"session": other})
	l, fresh := borrow(t, w, loan)
	l.Close()
	if fresh == other {
		t.Errorf("the timed-out session (child %d) was lent again", other)
	}

	idle := New(1, 200*time.Millisecond)
	defer idle.Close()
	l, pid := borrow(t, idle, loan)
	l.Close()
	testenv.WaitGone(t, "a session idle past the limit", map[string]int{"session": pid})
}

// TestCancelledLoan: the borrower's context ending kills the lent session
// (reported as cancelled), and it is not lent again.
func TestCancelledLoan(t *testing.T) {
	w := New(1, 0)
	defer w.Close()
	loan := loanFor(t)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := w.Borrow(ctx, loan)
	if err != nil {
		t.Fatal(err)
	}
	pid := s.(*lentSession).sess.Pid()
	cancel()
	testenv.WaitGone(t, "the cancelled loan's session", map[string]int{"session": pid})
	_, err = s.Call("environment", nil, nil)
	s.Close()
	var we *worker.Error
	if !errors.As(err, &we) || we.Kind != worker.KindCancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("a call after the loan was cancelled: %v, want a cancellation", err)
	}
	if _, next := borrow(t, w, loan); next == pid {
		t.Errorf("the cancelled session (child %d) was lent again", pid)
	}
}
