package worker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func frame(payload string) string {
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(payload)))
	return string(hdr[:]) + payload
}

func lengthOnly(n uint32) string {
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], n)
	return string(hdr[:])
}

func TestReadFrame(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string
		is    error
	}{
		{"one frame", frame(`{"a":1}`), `{"a":1}`, nil},
		{"empty frame", frame(""), "", nil},
		{"clean end", "", "", io.EOF},
		{"partial length", "\x01\x00", "", io.ErrUnexpectedEOF},
		{"truncated payload", lengthOnly(10) + "abc", "", io.ErrUnexpectedEOF},
		{"huge length, no data", lengthOnly(maxFrame), "", io.ErrUnexpectedEOF},
		{"over the limit", lengthOnly(maxFrame + 1), "", ErrFrameTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readFrame(strings.NewReader(tc.input))
			if tc.is != nil {
				if !errors.Is(err, tc.is) {
					t.Fatalf("error %v, want %v", err, tc.is)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestResponseRoundTrip(t *testing.T) {
	floats := []float32{0, float32(math.Copysign(0, -1)), 1.5, float32(math.Inf(-1)), math.Float32frombits(0x7fc00123), math.SmallestNonzeroFloat32}
	tests := []struct {
		name   string
		floats []float32
	}{
		{"no floats", nil},
		{"empty floats", []float32{}},
		{"special values", floats},
		{"larger than a read chunk", make([]float32, readChunk/4+3)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := wireResponse{Kind: kindResult, Result: []byte(`{"ok":true}`), HasFloats: tc.floats != nil, NFloats: len(tc.floats)}
			if err := writeJSONFrame(&buf, h); err != nil {
				t.Fatal(err)
			}
			if tc.floats != nil {
				if err := writeFloats(&buf, tc.floats); err != nil {
					t.Fatal(err)
				}
			}
			got, fs, err := readResponse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Result) != `{"ok":true}` || (fs == nil) != (tc.floats == nil) || len(fs) != len(tc.floats) {
				t.Fatalf("got %s with %d floats (nil %v)", got.Result, len(fs), fs == nil)
			}
			for i := range fs {
				if math.Float32bits(fs[i]) != math.Float32bits(tc.floats[i]) {
					t.Fatalf("float %d: bits %#x, want %#x", i, math.Float32bits(fs[i]), math.Float32bits(tc.floats[i]))
				}
			}
			if buf.Len() != 0 {
				t.Errorf("%d bytes left unread", buf.Len())
			}
		})
	}
}

func TestReadResponseRejects(t *testing.T) {
	tests := []struct {
		name, input, want string
	}{
		{"not JSON", frame("garbage"), "not JSON"},
		{"unknown kind", frame(`{"kind":"hello"}`), `kind "hello"`},
		{"negative count", frame(`{"kind":"result","has_floats":true,"n_floats":-1}`), "announces -1 floats"},
		{"count over the limit", frame(`{"kind":"result","has_floats":true,"n_floats":300000000}`), "limit"},
		{"size disagrees with count", frame(`{"kind":"result","has_floats":true,"n_floats":2}`) + frame("abcd"), "has 4 bytes, header announced 2 floats"},
		{"missing float frame", frame(`{"kind":"result","has_floats":true,"n_floats":2}`), "unexpected EOF"},
		{"truncated float frame", frame(`{"kind":"result","has_floats":true,"n_floats":2}`) + lengthOnly(8) + "abcd", "unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := readResponse(strings.NewReader(tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func FuzzReadResponse(f *testing.F) {
	f.Add([]byte(frame(`{"kind":"result","result":{"a":1},"has_floats":true,"n_floats":1}`) + frame("\x00\x00\x80\x3f")))
	f.Add([]byte(frame(`{"kind":"error","error":{"type":"ValueError","message":"m"}}`)))
	f.Add([]byte(lengthOnly(maxFrame)))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, fs, err := readResponse(bytes.NewReader(data))
		if err == nil && h.HasFloats && len(fs) != h.NFloats {
			t.Fatalf("accepted %d floats for a header announcing %d", len(fs), h.NFloats)
		}
	})
}

func TestRing(t *testing.T) {
	tests := []struct {
		name   string
		size   int
		writes []string
		want   string
	}{
		{"under capacity", 8, []string{"ab", "cd"}, "abcd"},
		{"exactly full", 4, []string{"ab", "cd"}, "abcd"},
		{"wraps", 4, []string{"abc", "def"}, "cdef"},
		{"one write larger than the ring", 4, []string{"x", "0123456789"}, "6789"},
		{"many small writes", 3, []string{"a", "b", "c", "d", "e"}, "cde"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tee bytes.Buffer
			r := newRing(tc.size, &tee)
			for _, w := range tc.writes {
				if n, err := r.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := r.String(); got != tc.want {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
			if tee.String() != strings.Join(tc.writes, "") {
				t.Errorf("tee got %q", tee.String())
			}
		})
	}
}

type failingWriter struct{ calls int }

func (f *failingWriter) Write(p []byte) (int, error) {
	f.calls++
	return 0, errors.New("closed")
}

func TestRingDropsFailingTee(t *testing.T) {
	fw := &failingWriter{}
	r := newRing(16, fw)
	r.Write([]byte("one"))
	r.Write([]byte("two"))
	if fw.calls != 1 || r.String() != "onetwo" {
		t.Fatalf("tee called %d times, kept %q; want 1 call and both writes kept", fw.calls, r.String())
	}
}
