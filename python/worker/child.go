package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"phase0/python/bridge"
)

// Subcommand is the hidden argument that makes the phase0 binary act as a
// worker: `phase0 __worker`. cmd/phase0 dispatches it to Main.
const Subcommand = "__worker"

// Environment variables through which Run configures the child.
const (
	EnvPython = "PHASE0_WORKER_PYTHON" // absolute path of the venv's python
	EnvPath   = "PHASE0_WORKER_PATH"   // sys.path additions, os.PathListSeparator-separated
	EnvModule = "PHASE0_WORKER_MODULE" // module whose functions are the ops
	// EnvFinalize=1 makes the child finalize Python before exiting (the
	// interpreter's full shutdown), for debugging atexit handlers and for
	// measuring what skipping it saves.
	EnvFinalize = "PHASE0_WORKER_FINALIZE"
)

// The protocol pipes, as passed by Run through ExtraFiles.
const (
	requestFD  = 3
	responseFD = 4
)

// Child exit statuses, so a parent's "exit status N" can be traced back here.
const (
	exitOK       = 0
	exitUsage    = 2 // not started by Run
	exitStart    = 3 // Python did not start; a fatal frame was sent
	exitProtocol = 4 // the pipes failed
	exitFinalize = 5 // Py_FinalizeEx reported an error
)

// Main is the child side of Run: it starts Python as described by the
// environment, answers request frames until the request pipe closes, and
// returns the process exit status.
func Main() int {
	if !isOpen(requestFD) || !isOpen(responseFD) {
		fmt.Fprintf(os.Stderr, "phase0 %s: file descriptors %d and %d are not open; this subcommand is started by phase0 itself\n",
			Subcommand, requestFD, responseFD)
		return exitUsage
	}
	// Grandchildren started with exec must not hold the protocol pipes open.
	syscall.CloseOnExec(requestFD)
	syscall.CloseOnExec(responseFD)
	// The parent's death (Pdeathsig) or a SIGTERM/SIGHUP takes the whole
	// process group down: grandchildren a runner spawned must not outlive us.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		<-sigs
		syscall.Kill(0, syscall.SIGKILL)
	}()
	in := os.NewFile(requestFD, "phase0-worker-requests")
	out := os.NewFile(responseFD, "phase0-worker-responses")

	module := os.Getenv(EnvModule)
	opts := bridge.Options{Executable: os.Getenv(EnvPython), ExtraPath: filepath.SplitList(os.Getenv(EnvPath))}
	if err := bridge.ResetFatalSignals(); err != nil {
		return fatal(out, err)
	}
	if module == "" {
		return fatal(out, fmt.Errorf("worker: %s is not set", EnvModule))
	}
	it, err := bridge.Start(opts)
	if err != nil {
		return fatal(out, err)
	}
	if err := writeJSONFrame(out, wireResponse{Kind: kindReady, Python: it.Prefix()}); err != nil {
		fmt.Fprintf(os.Stderr, "phase0 worker: announcing readiness: %v\n", err)
		return exitProtocol
	}

	for {
		frame, err := readFrame(in)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "phase0 worker: reading a request: %v\n", err)
			return exitProtocol
		}
		var req wireRequest
		if jerr := json.Unmarshal(frame, &req); jerr != nil {
			err = writeJSONFrame(out, errorResponse("BridgeError", "request is not JSON: "+jerr.Error(), ""))
		} else {
			err = serve(out, it, module, req)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "phase0 worker: writing the response to %q: %v\n", req.Op, err)
			return exitProtocol
		}
	}
	// Every answer is on the response pipe, and Python's stdout and stderr
	// are unbuffered (bridge sets Py_UnbufferedStdioFlag), so nothing is
	// left to flush: the interpreter's full shutdown (module teardown, GC of
	// torch's objects, joining library threads; ~0.5 s after a torch import)
	// would only delay the exit the parent waits for. The ops close every
	// file they write before answering; none relies on atexit.
	if os.Getenv(EnvFinalize) != "1" {
		return exitOK
	}
	if err := it.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "phase0 worker: %v\n", err)
		return exitFinalize
	}
	return exitOK
}

func serve(out io.Writer, it *bridge.Interp, module string, req wireRequest) error {
	result, floats, err := it.Call(module, req.Op, req.Args)
	var pe *bridge.PyError
	switch {
	case errors.As(err, &pe):
		return writeJSONFrame(out, wireResponse{Kind: kindError, Error: pe})
	case err != nil:
		return writeJSONFrame(out, errorResponse("BridgeError", err.Error(), ""))
	case !json.Valid(result):
		return writeJSONFrame(out, errorResponse("BridgeError",
			fmt.Sprintf("%s.%s returned a str that is not JSON: %.200q", module, req.Op, result), ""))
	}
	h := wireResponse{Kind: kindResult, Result: result, HasFloats: floats != nil, NFloats: len(floats)}
	if err := writeJSONFrame(out, h); err != nil {
		return err
	}
	if floats == nil {
		return nil
	}
	return writeFloats(out, floats)
}

func errorResponse(typ, msg, tb string) wireResponse {
	return wireResponse{Kind: kindError, Error: &bridge.PyError{Type: typ, Message: msg, Traceback: tb}}
}

func fatal(out io.Writer, err error) int {
	fmt.Fprintf(os.Stderr, "phase0 worker: %v\n", err)
	if werr := writeJSONFrame(out, wireResponse{Kind: kindFatal, Error: &bridge.PyError{Type: "StartError", Message: err.Error()}}); werr != nil {
		return exitProtocol
	}
	return exitStart
}

func isOpen(fd int) bool {
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st) == nil
}
