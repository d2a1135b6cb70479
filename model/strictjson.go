package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting checkStrict follows; real configs nest
// three or four levels (text_config.rope_parameters.…).
const maxJSONDepth = 64

// checkStrict refuses what encoding/json would silently accept in a
// config.json: bytes that are not UTF-8 (json replaces them with U+FFFD, so
// a corrupted file passes the native gates while Python refuses it) and a
// key repeated inside any object, at any depth (which value transformers
// uses is an accident of its parser). The error names the byte offset or
// the dotted path of the key.
func checkStrict(data []byte) error {
	if off := invalidUTF8(data); off >= 0 {
		return fmt.Errorf("%w: config.json is not UTF-8: invalid byte 0x%02x at offset %d", ErrConfig, data[off], off)
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
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil // ParseRaw reports syntax errors with its own wording
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
				return fmt.Errorf("%w: config.json: key %q appears twice", ErrConfig, join(top.path, key))
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
			if len(stack) >= maxJSONDepth {
				return fmt.Errorf("%w: config.json nests deeper than %d levels at %s", ErrConfig, maxJSONDepth, path)
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
