// Package strictjson refuses what encoding/json silently accepts in a file
// phase0 reads: bytes that are not UTF-8 (json replaces them with U+FFFD, so
// two readers see two texts) and a key repeated inside an object, at any
// depth (which value wins is an accident of the reader). config.json
// (model/) and reference.json (reference/) are checked with it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxDepth bounds the nesting Check follows; real files nest three or four
// levels (text_config.rope_parameters.…).
const MaxDepth = 64

// The kinds of Error, for errors.Is.
var (
	ErrNotUTF8      = errors.New("not UTF-8")
	ErrDuplicateKey = errors.New("duplicate key")
	ErrTooDeep      = errors.New("nested too deep")
)

// Error is what Check refuses, and where.
type Error struct {
	Kind   error  // ErrNotUTF8, ErrDuplicateKey or ErrTooDeep
	Offset int    // ErrNotUTF8: the first invalid byte's offset
	Byte   byte   // ErrNotUTF8: that byte
	Path   string // the dotted path of the repeated key, or of the too-deep value ("a.b[].c")
}

func (e *Error) Error() string {
	switch e.Kind {
	case ErrNotUTF8:
		return fmt.Sprintf("not UTF-8: invalid byte 0x%02x at offset %d", e.Byte, e.Offset)
	case ErrDuplicateKey:
		return fmt.Sprintf("key %q appears twice", e.Path)
	}
	return fmt.Sprintf("nests deeper than %d levels at %s", MaxDepth, e.Path)
}

func (e *Error) Unwrap() error { return e.Kind }

// Check returns an *Error for invalid UTF-8, a repeated key or nesting
// beyond MaxDepth, else nil. Syntax errors are not its business: it returns
// nil at the first one, for the caller's decoder to report in its words.
func Check(data []byte) error {
	if off := invalidUTF8(data); off >= 0 {
		return &Error{Kind: ErrNotUTF8, Offset: off, Byte: data[off]}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	// One frame per open object or array: the keys seen so far (nil for an
	// array) and the path to it. expectKey is true between an object's
	// members, where the next string token is a key.
	type frame struct {
		keys map[string]bool
		path string
		key  string // the member whose value is being read
	}
	var stack []*frame
	expectKey := false
	for {
		tok, err := dec.Token()
		if err == io.EOF || err != nil {
			return nil
		}
		if len(stack) > 0 && stack[len(stack)-1].keys != nil && expectKey {
			top := stack[len(stack)-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				expectKey = len(stack) > 0 && stack[len(stack)-1].keys != nil
				continue
			}
			key, _ := tok.(string)
			if top.keys[key] {
				return &Error{Kind: ErrDuplicateKey, Path: join(top.path, key)}
			}
			top.keys[key] = true
			top.key = key
			expectKey = false
			continue
		}
		// tok is a value (or an array's closing bracket).
		path := ""
		if len(stack) > 0 {
			top := stack[len(stack)-1]
			if top.keys != nil {
				path = join(top.path, top.key)
			} else {
				path = top.path + "[]"
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= MaxDepth {
				return &Error{Kind: ErrTooDeep, Path: path}
			}
			f := &frame{path: path}
			if tok == json.Delim('{') {
				f.keys = map[string]bool{}
			}
			stack = append(stack, f)
			expectKey = f.keys != nil
			continue
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		expectKey = len(stack) > 0 && stack[len(stack)-1].keys != nil
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// invalidUTF8 is the offset of the first byte that does not start a valid
// UTF-8 sequence, or -1.
func invalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}
