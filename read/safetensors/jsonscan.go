package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"unsafe"
)

// jsonScanner reads JSON from a byte slice held whole in memory. It is the
// lexer under the header and index parsers, which know the document's shape
// and call it directly instead of pulling generic tokens: encoding/json's
// Decoder.Token boxes every token in an interface and dominated the cost of
// reading a large header. It is strict RFC 8259 JSON; inputs it accepts,
// encoding/json accepts too. Errors are built only on failure, as
// FormatErrors at the current offset.
type jsonScanner struct {
	buf  []byte
	text string // buf viewed as a string, so names are substrings, not copies
	pos  int
	file string
	base int64  // bytes in the file before the JSON starts
	what string // "header" or "index", for messages
}

// newScanner scans buf, which the caller must never modify afterwards: the
// strings it returns share buf's memory (a header is read once into a
// buffer of its own, so copying it whole again would only cost time).
func newScanner(buf []byte, file string, base int64, what string) *jsonScanner {
	return &jsonScanner{buf: buf, text: unsafe.String(unsafe.SliceData(buf), len(buf)), file: file, base: base, what: what}
}

// errAt builds a FormatError at byte pos of the JSON.
func (s *jsonScanner) errAt(pos int, sentinel error, format string, args ...any) error {
	return &FormatError{File: s.file, Offset: s.base + int64(pos), Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

// syntax reports malformed JSON at the current position; context says what
// was being looked for, as encoding/json words it.
func (s *jsonScanner) syntax(context string) error {
	if s.pos >= len(s.buf) {
		return s.errAt(s.pos, nil, "%s JSON ends early", s.what)
	}
	return s.errAt(s.pos, nil, "%s JSON: invalid character %s %s", s.what, quoteChar(s.buf[s.pos]), context)
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	return strconv.QuoteRune(rune(c))
}

// ws skips white space and returns the next byte, or 0 at the end.
func (s *jsonScanner) ws() byte {
	for s.pos < len(s.buf) {
		switch c := s.buf[s.pos]; c {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return c
		}
	}
	return 0
}

// consume skips white space and, when the next byte is c, steps over it.
func (s *jsonScanner) consume(c byte) bool {
	if s.ws() == c && s.pos < len(s.buf) {
		s.pos++
		return true
	}
	return false
}

// colon reads the ':' after an object key.
func (s *jsonScanner) colon() error {
	if !s.consume(':') {
		return s.syntax("after object key")
	}
	return nil
}

// more is called after an element of an object or array closed by end: it
// reports whether another element follows (a ',' was read) or the
// container ended (end was read).
func (s *jsonScanner) more(end byte) (bool, error) {
	switch s.ws() {
	case ',':
		s.pos++
		return true, nil
	case end:
		if s.pos < len(s.buf) {
			s.pos++
			return false, nil
		}
	}
	if end == '}' {
		return false, s.syntax("after object key:value pair")
	}
	return false, s.syntax("after array element")
}

// first is called after an opening '{' or '[': it reports whether the
// container has an element (false when end follows at once).
func (s *jsonScanner) first(end byte) bool {
	if s.ws() == end && s.pos < len(s.buf) {
		s.pos++
		return false
	}
	return true
}

// key reads an object key and the ':' after it.
func (s *jsonScanner) key() (string, error) {
	if s.ws() != '"' {
		return "", s.syntax("looking for beginning of object key string")
	}
	k, err := s.str()
	if err != nil {
		return "", err
	}
	return k, s.colon()
}

// str reads a string at the current position, which must be '"'. Strings
// without escapes are substrings of the document.
func (s *jsonScanner) str() (string, error) {
	start := s.pos
	// Fast path: the first quote, backslash or control byte, found eight
	// bytes at a time, is the closing quote (a name has neither escape nor
	// control character).
	i := start + 1 + special(s.buf[start+1:])
	if i < len(s.buf) && s.buf[i] == '"' {
		s.pos = i + 1
		return s.text[start+1 : i], nil
	}
	for i < len(s.buf) {
		c := s.buf[i]
		if c == '"' {
			s.pos = i + 1
			return s.text[start+1 : i], nil
		}
		if c == '\\' {
			return s.escaped(start)
		}
		if c < 0x20 {
			s.pos = i
			return "", s.syntax("in string literal")
		}
		i++
	}
	s.pos = len(s.buf)
	return "", s.syntax("")
}

// special returns the index of the first '"', backslash or control byte in
// b, or len(b). It tests eight bytes per step: in each word, a byte equal
// to '"' or '\\' becomes zero after an XOR, and a zero or control byte
// borrows when 1 or 0x20 is subtracted from it while its top bit is clear.
// A borrow can also flag bytes above a true match, never below one, so the
// lowest flag is exact.
func special(b []byte) int {
	const ones, tops = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		q, bs := w^(ones*'"'), w^(ones*'\\')
		if m := ((q-ones)&^q | (bs-ones)&^bs | (w-ones*0x20)&^w) & tops; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return len(b)
}

// escaped finishes a string holding escapes: it checks them as it finds the
// closing quote, then lets encoding/json decode it so surrogate pairs and
// invalid \u sequences mean exactly what they mean there.
func (s *jsonScanner) escaped(start int) (string, error) {
	i := start + 1
	for i < len(s.buf) {
		c := s.buf[i]
		switch {
		case c == '"':
			var out string
			if err := json.Unmarshal(s.buf[start:i+1], &out); err != nil {
				s.pos = start
				return "", s.errAt(start, nil, "%s JSON: %v", s.what, err)
			}
			s.pos = i + 1
			return out, nil
		case c < 0x20:
			s.pos = i
			return "", s.syntax("in string literal")
		case c == '\\':
			if i+1 >= len(s.buf) {
				s.pos = len(s.buf)
				return "", s.syntax("")
			}
			switch s.buf[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for j := i + 2; j < i+6; j++ {
					if j >= len(s.buf) {
						s.pos = len(s.buf)
						return "", s.syntax("")
					}
					if !isHex(s.buf[j]) {
						s.pos = j
						return "", s.syntax("in \\u hexadecimal character escape")
					}
				}
				i += 6
			default:
				s.pos = i + 1
				return "", s.syntax("in string escape code")
			}
		default:
			i++
		}
	}
	s.pos = len(s.buf)
	return "", s.syntax("")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// number reads a JSON number at the current position and returns its text.
func (s *jsonScanner) number() (string, error) {
	start, i := s.pos, s.pos
	digits := func() bool {
		j := i
		for i < len(s.buf) && '0' <= s.buf[i] && s.buf[i] <= '9' {
			i++
		}
		return i > j
	}
	fail := func(context string) (string, error) {
		s.pos = i
		return "", s.syntax(context)
	}
	if i < len(s.buf) && s.buf[i] == '-' {
		i++
	}
	switch {
	case i < len(s.buf) && s.buf[i] == '0':
		i++
	case !digits():
		return fail("in numeric literal")
	}
	if i < len(s.buf) && s.buf[i] == '.' {
		i++
		if !digits() {
			return fail("after decimal point in numeric literal")
		}
	}
	if i < len(s.buf) && (s.buf[i] == 'e' || s.buf[i] == 'E') {
		i++
		if i < len(s.buf) && (s.buf[i] == '+' || s.buf[i] == '-') {
			i++
		}
		if !digits() {
			return fail("in exponent of numeric literal")
		}
	}
	s.pos = i
	return s.text[start:i], nil
}

// uint reads a non-negative integer that fits int64, element idx of a
// tensor's field array (for messages like `tensor "a": shape[0] = -1`).
func (s *jsonScanner) uint(name, field string, idx int) (int64, error) {
	what := func() string { return fmt.Sprintf("tensor %q: %s[%d]", name, field, idx) }
	at := s.pos
	if c := s.ws(); c != '-' && (c < '0' || c > '9') {
		desc, err := s.describe()
		if err != nil {
			return 0, err
		}
		return 0, s.errAt(at, nil, "%s: got %s, want an integer", what(), desc)
	}
	// Fast path: plain digits, at most 18 of them, cannot overflow.
	i, v := s.pos, int64(0)
	for i < len(s.buf) && i-s.pos < 18 && '0' <= s.buf[i] && s.buf[i] <= '9' {
		v = v*10 + int64(s.buf[i]-'0')
		i++
	}
	if i > s.pos && (s.buf[s.pos] != '0' || i == s.pos+1) && (i == len(s.buf) || !isNumberByte(s.buf[i])) {
		s.pos = i
		return v, nil
	}
	num, err := s.number()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, s.errAt(at, nil, "%s = %s is not an integer in range", what(), num)
	}
	if n < 0 {
		return 0, s.errAt(at, nil, "%s = %d is negative", what(), n)
	}
	return n, nil
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// describe names the value at the current position for a "got X, want Y"
// message, reading it to make sure it is valid JSON; a syntax error wins.
func (s *jsonScanner) describe() (string, error) {
	switch c := s.ws(); {
	case c == '{' || c == '[' || c == '}' || c == ']':
		return strconv.Quote(string(c)), nil
	case c == '"':
		v, err := s.str()
		if err != nil {
			return "", err
		}
		return "string " + strconv.Quote(v), nil
	case c == '-' || '0' <= c && c <= '9':
		num, err := s.number()
		if err != nil {
			return "", err
		}
		return "number " + num, nil
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(s.buf[s.pos:], []byte(lit)) {
			return lit, nil
		}
	}
	return "", s.syntax("looking for beginning of value")
}

// isNull steps over a null literal when one comes next.
func (s *jsonScanner) isNull() bool {
	if s.ws() == 'n' && bytes.HasPrefix(s.buf[s.pos:], []byte("null")) {
		s.pos += 4
		return true
	}
	return false
}

// maxDepth bounds the nesting skip follows, as encoding/json does, so a
// document of brackets cannot exhaust the stack.
const maxDepth = 10000

// skip steps over one value of any kind and returns its bytes.
func (s *jsonScanner) skip(depth int) ([]byte, error) {
	start := s.ws()
	if depth > maxDepth {
		return nil, s.errAt(s.pos, nil, "%s JSON: exceeded max depth", s.what)
	}
	from := s.pos
	switch {
	case start == '{' || start == '[':
		end := byte('}')
		if start == '[' {
			end = ']'
		}
		s.pos++
		if s.first(end) {
			for {
				if start == '{' {
					if _, err := s.key(); err != nil {
						return nil, err
					}
				}
				if _, err := s.skip(depth + 1); err != nil {
					return nil, err
				}
				more, err := s.more(end)
				if err != nil {
					return nil, err
				}
				if !more {
					break
				}
			}
		}
	case start == '"':
		if _, err := s.str(); err != nil {
			return nil, err
		}
	case start == '-' || '0' <= start && start <= '9':
		if _, err := s.number(); err != nil {
			return nil, err
		}
	default:
		matched := false
		for _, lit := range []string{"true", "false", "null"} {
			if bytes.HasPrefix(s.buf[s.pos:], []byte(lit)) {
				s.pos += len(lit)
				matched = true
				break
			}
		}
		if !matched {
			return nil, s.syntax("looking for beginning of value")
		}
	}
	return s.buf[from:s.pos], nil
}

// end checks that only white space follows the top-level value.
func (s *jsonScanner) end() error {
	if s.ws() == 0 && s.pos >= len(s.buf) {
		return nil
	}
	at := s.pos
	desc, err := s.describe()
	if err != nil {
		return s.errAt(at, nil, "after the %s object: %v", s.what, err)
	}
	return s.errAt(at, nil, "unexpected %s after the %s object", desc, s.what)
}
