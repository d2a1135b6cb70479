package worker

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"unsafe"

	"phase0/python/bridge"
)

// The protocol on the dedicated pipes: every frame is a uint32 little-endian
// length followed by that many bytes. Requests are one JSON frame each. A
// response is a JSON header frame, followed by one raw frame of little-endian
// float32 values when the header says HasFloats. The child opens with a
// "ready" (or "fatal") header before reading any request.

// maxFrame bounds every length read from the pipe (1 GiB holds 268M floats).
const maxFrame = 1 << 30

// ErrFrameTooLarge is returned for a frame whose length prefix exceeds maxFrame.
var ErrFrameTooLarge = errors.New("worker: frame too large")

const (
	kindReady  = "ready"  // child started Python and waits for requests
	kindFatal  = "fatal"  // child could not start Python; it exits next
	kindResult = "result" // the op returned
	kindError  = "error"  // the op raised, or returned something unusable
)

type wireRequest struct {
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args"`
}

type wireResponse struct {
	Kind      string          `json:"kind"`
	Result    json.RawMessage `json:"result,omitempty"`
	HasFloats bool            `json:"has_floats,omitempty"`
	NFloats   int             `json:"n_floats,omitempty"`
	Error     *bridge.PyError `json:"error,omitempty"`
	Python    string          `json:"python,omitempty"` // sys.prefix, in the ready header
}

func writeFrame(w io.Writer, payload []byte) error {
	if len(payload) > maxFrame {
		return fmt.Errorf("%w: writing %d bytes, limit %d", ErrFrameTooLarge, len(payload), maxFrame)
	}
	// Small frames go out in one write; large ones are not copied just to
	// prepend four bytes.
	if len(payload) <= 64<<10 {
		buf := make([]byte, 4+len(payload))
		binary.LittleEndian.PutUint32(buf, uint32(len(payload)))
		copy(buf[4:], payload)
		_, err := w.Write(buf)
		return err
	}
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(payload)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// readFrame returns io.EOF only when the stream ends cleanly between frames.
func readFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > maxFrame {
		return nil, fmt.Errorf("%w: length prefix %d, limit %d", ErrFrameTooLarge, n, maxFrame)
	}
	// Grow with the data actually received, so a corrupt length prefix cannot
	// make us allocate a gigabyte up front.
	buf := make([]byte, 0, min(int(n), readChunk))
	for len(buf) < int(n) {
		k := min(int(n)-len(buf), readChunk)
		buf = slices.Grow(buf, k)
		start := len(buf)
		buf = buf[:start+k]
		if _, err := io.ReadFull(r, buf[start:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("worker: frame of %d bytes: %w", n, err)
		}
	}
	return buf, nil
}

// readChunk is the most a frame read allocates ahead of the data.
const readChunk = 4 << 20

func writeJSONFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("worker: encoding frame: %w", err)
	}
	return writeFrame(w, b)
}

// littleEndian is true on hosts whose float32 memory layout is the wire
// layout, where float frames are written and read without conversion.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// writeFloats writes fs as one raw frame of little-endian float32.
func writeFloats(w io.Writer, fs []float32) error {
	if littleEndian {
		var raw []byte
		if len(fs) > 0 {
			raw = unsafe.Slice((*byte)(unsafe.Pointer(&fs[0])), 4*len(fs))
		}
		return writeFrame(w, raw)
	}
	b := make([]byte, 4*len(fs))
	for i, f := range fs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return writeFrame(w, b)
}

// readFloats reads the raw frame of n float32 that a header announced,
// straight into the returned slice.
func readFloats(r io.Reader, n int) ([]float32, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("worker: float frame: %w", err)
	}
	if size := binary.LittleEndian.Uint32(hdr[:]); uint64(size) != 4*uint64(n) {
		return nil, fmt.Errorf("worker: float frame has %d bytes, header announced %d floats (%d bytes)", size, n, 4*n)
	}
	const chunk = readChunk / 4
	fs := make([]float32, 0, min(n, chunk))
	for len(fs) < n {
		k := min(n-len(fs), chunk)
		fs = slices.Grow(fs, k)
		start := len(fs)
		fs = fs[:start+k]
		raw := unsafe.Slice((*byte)(unsafe.Pointer(&fs[start])), 4*k)
		if _, err := io.ReadFull(r, raw); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("worker: float frame of %d bytes: %w", 4*n, err)
		}
		if !littleEndian {
			for i := start; i < len(fs); i++ {
				fs[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(i-start):]))
			}
		}
	}
	return fs, nil
}

// readResponse reads one header frame and, when it announces floats, the raw
// float frame after it.
func readResponse(r io.Reader) (wireResponse, []float32, error) {
	b, err := readFrame(r)
	if err != nil {
		return wireResponse{}, nil, err
	}
	var h wireResponse
	if err := json.Unmarshal(b, &h); err != nil {
		return wireResponse{}, nil, fmt.Errorf("worker: response header is not JSON: %w", err)
	}
	switch h.Kind {
	case kindReady, kindFatal, kindResult, kindError:
	default:
		return wireResponse{}, nil, fmt.Errorf("worker: response header has kind %q, want one of ready, fatal, result, error", h.Kind)
	}
	if !h.HasFloats {
		return h, nil, nil
	}
	if h.NFloats < 0 || h.NFloats > maxFrame/4 {
		return wireResponse{}, nil, fmt.Errorf("worker: response header announces %d floats, limit %d", h.NFloats, maxFrame/4)
	}
	fs, err := readFloats(r, h.NFloats)
	if err != nil {
		return wireResponse{}, nil, err
	}
	return h, fs, nil
}
