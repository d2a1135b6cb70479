// Package worker isolates Python work in a child process of the same binary,
// so a segfault in torch, an out-of-memory kill or a hang ends the child, not
// phase0. The parent never initializes Python; the child (phase0 __worker)
// embeds it through package bridge and answers length-prefixed frames on a
// dedicated pipe pair, so whatever Python prints cannot corrupt the protocol.
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
	"sync/atomic"
	"syscall"
	"time"
)

// Request is one call: Op names a function of the worker module, Args is
// passed to it as a JSON str ("{}" when empty).
type Request struct {
	Op   string
	Args json.RawMessage
}

// Response is what an op returned: its JSON (compacted), and the float32 values when it
// returned (str, buffer) (nil otherwise).
type Response struct {
	Result json.RawMessage
	Floats []float32
}

// Options configures the child.
type Options struct {
	Python    string        // absolute path of the venv's python
	ExtraPath []string      // prepended to sys.path, e.g. the pyshim directory
	Timeout   time.Duration // whole-run limit, 0 for none (the context still applies)
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

// Run starts the child, sends reqs in order and returns one Response per
// request. It stops at the first op that raises (*OpError, with the responses
// so far). A child that dies returns *CrashError; a deadline kills the whole
// process group and returns *TimeoutError, which wraps ErrTimeout.
func Run(ctx context.Context, opts Options, module string, reqs []Request) ([]Response, error) {
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("worker: not started: %w", err)
	}
	if module == "" {
		return nil, errors.New("worker: no module named for the ops")
	}
	if !filepath.IsAbs(opts.Python) {
		return nil, fmt.Errorf("worker: python %q is not an absolute path", opts.Python)
	}
	argv := opts.Exe
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("worker: locating this executable to start the child: %w", err)
		}
		argv = []string{exe, Subcommand}
	}
	env := append(os.Environ(), opts.Env...)
	env = append(env,
		EnvPython+"="+opts.Python,
		EnvPath+"="+strings.Join(opts.ExtraPath, string(os.PathListSeparator)),
		EnvModule+"="+module,
	)

	// Pdeathsig fires when the thread that started the child exits, so keep
	// this goroutine on one thread until the child is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	s, err := start(ctx, argv, env, newRing(tailSize, opts.Stderr))
	if err != nil {
		return nil, err
	}
	return s.talk(ctx, reqs)
}

type session struct {
	cmd     *exec.Cmd
	started time.Time
	reqW    *os.File // requests, parent → child fd 3
	respR   *os.File // responses, child fd 4 → parent
	outR    *os.File // the child's stdout and stderr
	tail    *ring

	exited    chan struct{} // closed when the child has been reaped
	copied    chan struct{} // closed when the output pipe is drained
	abort     chan struct{} // closed to have the watcher kill the child
	watched   chan struct{} // closed when the watcher is done
	cancelled atomic.Bool   // the context ended the child
	aborted   atomic.Bool   // we killed the child for another reason
}

func start(ctx context.Context, argv, env []string, tail *ring) (*session, error) {
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
		return nil, fmt.Errorf("worker: creating pipes: %w", err)
	}
	// A logits vector is ~600 KB; a bigger response pipe saves context
	// switches. The default size still works when the kernel refuses.
	setPipeSize(respR, 1<<20)

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout = outW
	cmd.Stderr = outW
	cmd.ExtraFiles = []*os.File{reqR, respW} // fd 3 and fd 4 in the child
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, fmt.Errorf("worker: starting %s: %w", argv[0], err)
	}
	// The child has its own copies; ours would keep the pipes from reporting EOF.
	reqR.Close()
	respW.Close()
	outW.Close()

	s := &session{
		cmd: cmd, started: time.Now(), reqW: reqW, respR: respR, outR: outR, tail: tail,
		exited: make(chan struct{}), copied: make(chan struct{}),
		abort: make(chan struct{}), watched: make(chan struct{}),
	}
	go func() {
		io.Copy(tail, outR) // ends at EOF or at the deadline set once the child is gone
		close(s.copied)
	}()
	go func() {
		cmd.Wait() // the status is read from cmd.ProcessState
		close(s.exited)
	}()
	go s.watch(ctx)
	return s, nil
}

// fSetPipeSz is F_SETPIPE_SZ from <fcntl.h> (Linux), absent from package syscall.
const fSetPipeSz = 1031

func setPipeSize(f *os.File, size int) {
	if raw, err := f.SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) {
			syscall.Syscall(syscall.SYS_FCNTL, fd, fSetPipeSz, uintptr(size))
		})
	}
}

func (s *session) killGroup() {
	// The child leads its own process group, so this reaches grandchildren too.
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
}

// watch kills the process group when the context ends or talk asks for it,
// and, once the child is reaped, kills any leftover grandchildren and bounds
// further pipe I/O.
func (s *session) watch(ctx context.Context) {
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

// talk runs the protocol and always leaves the child reaped and the pipes closed.
func (s *session) talk(ctx context.Context, reqs []Request) ([]Response, error) {
	defer func() {
		<-s.watched
		<-s.copied
		s.reqW.Close()
		s.respR.Close()
		s.outR.Close()
	}()

	hello, _, err := readResponse(s.respR)
	if err != nil {
		return nil, s.failed(ctx, "", err)
	}
	switch hello.Kind {
	case kindReady:
	case kindFatal:
		s.stop(crashGrace)
		msg := "no reason given"
		if hello.Error != nil {
			msg = hello.Error.Message
		}
		return nil, fmt.Errorf("%w: %s", ErrStart, msg)
	default:
		return nil, s.failed(ctx, "", fmt.Errorf("first frame has kind %q, want %q", hello.Kind, kindReady))
	}

	responses := make([]Response, 0, len(reqs))
	for _, req := range reqs {
		args := req.Args
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		if err := writeJSONFrame(s.reqW, wireRequest{Op: req.Op, Args: args}); err != nil {
			return responses, s.failed(ctx, req.Op, err)
		}
		h, floats, err := readResponse(s.respR)
		if err != nil {
			return responses, s.failed(ctx, req.Op, err)
		}
		switch h.Kind {
		case kindResult:
			responses = append(responses, Response{Result: h.Result, Floats: floats})
		case kindError:
			s.stop(exitGrace)
			e := &OpError{Op: req.Op, Type: "BridgeError", Message: "no error details"}
			if h.Error != nil {
				e.Type, e.Message, e.Traceback = h.Error.Type, h.Error.Message, h.Error.Traceback
			}
			return responses, e
		default:
			return responses, s.failed(ctx, req.Op, fmt.Errorf("response has kind %q, want %q or %q", h.Kind, kindResult, kindError))
		}
	}
	// Every answer is in: a child that is slow to finalize, or a caller's
	// context that ends now, no longer matters.
	s.stop(exitGrace)
	return responses, nil
}

// stop closes the request pipe, which asks the child to finalize and exit,
// and kills it if it has not exited within grace.
func (s *session) stop(grace time.Duration) {
	s.reqW.Close()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		close(s.abort)
		<-s.exited
	}
}

// failed turns a broken conversation into the error that explains it: the
// deadline, the signal or exit status that ended the child, or the protocol
// violation.
func (s *session) failed(ctx context.Context, op string, ioErr error) error {
	s.stop(crashGrace)
	<-s.watched
	<-s.copied
	tail := s.tail.String()
	if s.cancelled.Load() {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return &TimeoutError{Op: op, After: time.Since(s.started), StderrTail: tail}
		}
		return fmt.Errorf("worker: op %q cancelled, the child's process group was killed: %w", op, ctx.Err())
	}
	return &CrashError{Op: op, Cause: s.cause(ioErr), StderrTail: tail}
}

func (s *session) cause(ioErr error) string {
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
		return "killed by signal " + signalName(ws.Signal())
	case ws.Exited() && ws.ExitStatus() != 0:
		return fmt.Sprintf("exit status %d", ws.ExitStatus())
	case clean:
		return "exited with status 0 without answering"
	default:
		return fmt.Sprintf("broke the protocol (%v)", ioErr)
	}
}

func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGABRT: "SIGABRT", syscall.SIGALRM: "SIGALRM", syscall.SIGBUS: "SIGBUS",
		syscall.SIGFPE: "SIGFPE", syscall.SIGHUP: "SIGHUP", syscall.SIGILL: "SIGILL",
		syscall.SIGINT: "SIGINT", syscall.SIGKILL: "SIGKILL", syscall.SIGPIPE: "SIGPIPE",
		syscall.SIGQUIT: "SIGQUIT", syscall.SIGSEGV: "SIGSEGV", syscall.SIGSYS: "SIGSYS",
		syscall.SIGTERM: "SIGTERM", syscall.SIGTRAP: "SIGTRAP", syscall.SIGUSR1: "SIGUSR1",
		syscall.SIGUSR2: "SIGUSR2", syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ",
	}
	if n, ok := names[sig]; ok {
		return n
	}
	return fmt.Sprintf("%d (%s)", int(sig), sig)
}
