// Package worker isolates Python work in a child process of the same binary,
// so a segfault in torch, an out-of-memory kill or a hang ends the child, not
// phase0. The parent never initializes Python; the child (phase0 __worker)
// embeds it through package bridge and answers length-prefixed frames on a
// dedicated pipe pair, so whatever Python prints cannot corrupt the protocol.
//
// A Session is one child: Start it, Call ops one at a time, Close it. An op
// that raises leaves the session usable; a child that dies, times out or is
// cancelled ends it, and every later Call returns the same *Error.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"phase0/python/bridge"
)

// Options configures the child.
type Options struct {
	Python    string        // absolute path of the venv's python
	ExtraPath []string      // prepended to sys.path, e.g. the pyshim directory
	Timeout   time.Duration // whole-session limit, 0 for none (the context still applies)
	Stderr    io.Writer     // optional: receives the child's stdout and stderr live
	Env       []string      // extra KEY=value entries on top of this process's environment
	// Exe overrides the command (default: this executable with the hidden
	// Subcommand). Tests use it to re-execute the test binary.
	Exe []string
}

const (
	// exitGrace is how long a child that answered everything may take to
	// finalize Python before it is killed.
	exitGrace = 30 * time.Second
	// crashGrace is how long a child that stopped answering may take to exit
	// by itself, so its real exit status can be reported.
	crashGrace = 5 * time.Second
	// pipeGrace bounds reads after the child exited, in case a grandchild
	// that left the process group still holds a pipe.
	pipeGrace = 2 * time.Second
)

// Session is one running worker child. Calls are serialised.
type Session struct {
	module  string
	cmd     *exec.Cmd
	started time.Time
	reqW    *os.File // requests, parent → child fd 3
	respR   *os.File // responses, child fd 4 → parent
	outR    *os.File // the child's stdout and stderr
	tail    *ring
	ctx     context.Context
	cancel  context.CancelFunc

	exited    chan struct{}                   // closed when the child has been reaped
	copied    chan struct{}                   // closed when the output pipe is drained
	abort     chan struct{}                   // closed to have the watcher kill the child
	watched   chan struct{}                   // closed when the watcher is done
	cancelled atomic.Bool                     // the context (or a bound one) ended the child
	bound     atomic.Pointer[context.Context] // the bound context that ended the child, if one did
	aborted   atomic.Bool                     // we killed the child for another reason

	mu      sync.Mutex
	dead    *Error // set once the child is gone; returned by every later Call
	closed  bool
	abortMu sync.Once
}

// Start launches the child and waits until Python is up in it. The session
// lives until Close, the context ends, or Options.Timeout passes.
func Start(ctx context.Context, opts Options, module string) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Kind: KindCancelled, Err: err}
	}
	if module == "" {
		return nil, &Error{Kind: KindNotStarted, Cause: "no module named for the ops"}
	}
	if !filepath.IsAbs(opts.Python) {
		return nil, &Error{Kind: KindNotStarted, Cause: fmt.Sprintf("python %q is not an absolute path", opts.Python), Err: ErrStart}
	}
	argv := opts.Exe
	if len(argv) == 0 {
		exe, err := executable()
		if err != nil {
			return nil, &Error{Kind: KindNotStarted, Cause: "locating this executable to start the child", Err: err}
		}
		argv = []string{exe, Subcommand}
	}
	env := append(os.Environ(), opts.Env...)
	env = append(env,
		EnvPython+"="+opts.Python,
		EnvPath+"="+strings.Join(opts.ExtraPath, string(os.PathListSeparator)),
		EnvModule+"="+module,
	)
	var cancel context.CancelFunc
	if opts.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	s, err := spawn(ctx, argv, env, newRing(tailSize, opts.Stderr))
	if err != nil {
		cancel()
		return nil, err
	}
	s.module, s.ctx, s.cancel = module, ctx, cancel

	hello, _, err := readResponse(s.respR)
	if err != nil {
		return nil, s.failed("", err)
	}
	switch hello.Kind {
	case kindReady:
		return s, nil
	case kindFatal:
		s.stop(crashGrace)
		s.release()
		e := &Error{Kind: KindNotStarted, Cause: "python did not start in the child", Err: ErrStart, Tail: s.tail.String()}
		if hello.Error != nil {
			e.Py = hello.Error
			e.Cause = hello.Error.Message
		}
		return nil, e
	default:
		return nil, s.failed("", fmt.Errorf("first frame has kind %q, want %q", hello.Kind, kindReady))
	}
}

// spawn starts the child from a goroutine locked to its OS thread for the
// child's whole life: Pdeathsig fires when the thread that started the child
// exits, not the process, so that thread must outlive the child.
func spawn(ctx context.Context, argv, env []string, tail *ring) (*Session, error) {
	var files []*os.File
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	reqR, reqW, err1 := pipe()
	respR, respW, err2 := pipe()
	outR, outW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, &Error{Kind: KindNotStarted, Cause: "creating pipes", Err: err}
	}
	// A logits vector is ~600 KB; a bigger response pipe saves context
	// switches. The default size still works when the kernel refuses.
	setPipeSize(respR, 1<<20)

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout = outW
	cmd.Stderr = outW
	cmd.ExtraFiles = []*os.File{reqR, respW} // fd 3 and fd 4 in the child
	// SIGTERM, not SIGKILL: the child catches it and kills its whole process
	// group, so grandchildren the runner spawned die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}

	s := &Session{
		cmd: cmd, reqW: reqW, respR: respR, outR: outR, tail: tail,
		exited: make(chan struct{}), copied: make(chan struct{}),
		abort: make(chan struct{}), watched: make(chan struct{}),
	}
	startErr := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after the child
		if err := cmd.Start(); err != nil {
			startErr <- err
			return
		}
		startErr <- nil
		cmd.Wait() // the status is read from cmd.ProcessState
		close(s.exited)
	}()
	if err := <-startErr; err != nil {
		closeAll()
		return nil, &Error{Kind: KindNotStarted, Cause: "starting " + argv[0], Err: err}
	}
	s.started = time.Now()
	// The child has its own copies; ours would keep the pipes from reporting EOF.
	reqR.Close()
	respW.Close()
	outW.Close()
	go func() {
		io.Copy(tail, outR) // ends at EOF or at the deadline set once the child is gone
		close(s.copied)
	}()
	go s.watch(ctx)
	return s, nil
}

func setPipeSize(f *os.File, size int) {
	if raw, err := f.SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) {
			unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size)
		})
	}
}

func (s *Session) killGroup() {
	// The child leads its own process group, so this reaches grandchildren too.
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

// watch kills the process group when the context ends or the session asks
// for it, and, once the child is reaped, kills any leftover grandchildren and
// bounds further pipe I/O.
func (s *Session) watch(ctx context.Context) {
	defer close(s.watched)
	done, abort := ctx.Done(), s.abort
	for {
		select {
		case <-done:
			s.cancelled.Store(true)
			s.killGroup()
			done = nil
		case <-abort:
			s.aborted.Store(true)
			s.killGroup()
			abort = nil
		case <-s.exited:
			s.killGroup()
			deadline := time.Now().Add(pipeGrace)
			s.respR.SetReadDeadline(deadline)
			s.reqW.SetWriteDeadline(deadline)
			s.outR.SetReadDeadline(deadline)
			return
		}
	}
}

// Call runs one op with args (any JSON-encodable value; nil sends {}),
// decodes its JSON result into out (unless out is nil) and returns the
// float32 values when the op returned (str, buffer), nil otherwise.
// A Python exception is an *Error of KindRaised and the session stays
// usable; any other *Error means the child is gone.
func (s *Session) Call(op string, args, out any) ([]float32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead != nil {
		return nil, s.dead
	}
	if s.closed {
		return nil, &Error{Op: op, Kind: KindNotStarted, Cause: "the session is closed"}
	}
	raw := json.RawMessage("{}")
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("worker: encoding the arguments of %s: %w", op, err)
		}
		raw = b
	}
	if err := writeJSONFrame(s.reqW, wireRequest{Op: op, Args: raw}); err != nil {
		return nil, s.failed(op, err)
	}
	h, floats, err := readResponse(s.respR)
	if err != nil {
		return nil, s.failed(op, err)
	}
	switch h.Kind {
	case kindResult:
	case kindError:
		e := &Error{Op: op, Kind: KindRaised, Py: h.Error}
		if e.Py == nil {
			e.Py = &bridge.PyError{Type: "BridgeError", Message: "no error details"}
		}
		return nil, e
	default:
		return nil, s.failed(op, fmt.Errorf("response has kind %q, want %q or %q", h.Kind, kindResult, kindError))
	}
	if out != nil {
		if err := json.Unmarshal(h.Result, out); err != nil {
			return floats, fmt.Errorf("worker: decoding the result of %s.%s: %w", s.module, op, err)
		}
	}
	return floats, nil
}

// Close asks the child to finalize and exit (killing it after a grace
// period) and releases the session. It is safe to call more than once.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.dead == nil {
		s.stop(exitGrace)
	}
	s.release()
	return nil
}

// Bind ties the session to ctx until stop is called, on top of the
// context it was started with: when ctx ends first, the child is killed and
// the call it cut short (or the next one) reports ctx's reason, as a
// session started with ctx would: its deadline is KindTimedOut, anything
// else KindCancelled. A lender uses it to give each loan of a long-lived
// session its own time limit and its own cancellation. stop reports
// whether it unbound ctx before it ended.
func (s *Session) Bind(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		s.bound.Store(&ctx)
		s.cancelled.Store(true)
		s.killGroup()
	})
}

// Pid is the child's process id (its process group id too).
func (s *Session) Pid() int { return s.cmd.Process.Pid }

// release waits for the helpers and closes our pipe ends.
func (s *Session) release() {
	<-s.watched
	<-s.copied
	s.reqW.Close()
	s.respR.Close()
	s.outR.Close()
	if s.cancel != nil {
		s.cancel()
	}
}

// stop closes the request pipe, which asks the child to finalize and exit,
// and kills it if it has not exited within grace.
func (s *Session) stop(grace time.Duration) {
	s.reqW.Close()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		s.abortMu.Do(func() { close(s.abort) })
		<-s.exited
	}
}

// failed turns a broken conversation into the error that explains it: the
// deadline, the cancellation, the signal or exit status that ended the
// child, or the protocol violation. The session is dead afterwards.
func (s *Session) failed(op string, ioErr error) *Error {
	s.stop(crashGrace)
	<-s.watched
	<-s.copied
	e := &Error{Op: op, After: time.Since(s.started), Tail: s.tail.String()}
	ended := s.ctx
	if b := s.bound.Load(); b != nil {
		ended = *b
	}
	switch {
	case s.cancelled.Load() && errors.Is(ended.Err(), context.DeadlineExceeded):
		e.Kind, e.Err = KindTimedOut, ErrTimeout
	case s.cancelled.Load():
		e.Kind, e.Err = KindCancelled, context.Cause(ended)
	default:
		e.Kind, e.Cause = KindCrashed, s.cause(ioErr)
	}
	s.dead = e
	s.release()
	return e
}

func (s *Session) cause(ioErr error) string {
	ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
	clean := errors.Is(ioErr, io.EOF) || errors.Is(ioErr, io.ErrUnexpectedEOF) || errors.Is(ioErr, syscall.EPIPE)
	switch {
	case !ok:
		return "ended: " + s.cmd.ProcessState.String()
	case s.aborted.Load():
		return fmt.Sprintf("broke the protocol (%v) and was killed", ioErr)
	case ws.Signaled() && ws.Signal() == syscall.SIGKILL:
		return "killed (likely out of memory)"
	case ws.Signaled():
		return "killed by signal " + unix.SignalName(ws.Signal())
	case ws.Exited() && ws.ExitStatus() != 0:
		return fmt.Sprintf("exit status %d", ws.ExitStatus())
	case clean:
		return "exited with status 0 without answering"
	default:
		return fmt.Sprintf("broke the protocol (%v)", ioErr)
	}
}
