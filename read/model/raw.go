package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"regexp"
	"strings"

	"phase0/internal/boundedfile"
)

// MaxConfigBytes bounds config.json: real ones are a few KiB.
const MaxConfigBytes = 4 << 20

// ErrConfig marks a config.json that could not be read or parsed at all
// (the run cannot evaluate the model; exit 2).
var ErrConfig = errors.New("unreadable config.json")

// Raw is config.json as written, one entry per top-level key. Keeping the
// raw messages lets absent, null, false and 0 stay distinguishable.
type Raw struct {
	fields map[string]json.RawMessage
}

// ReadRaw reads and parses config.json from fsys.
func ReadRaw(fsys fs.FS) (*Raw, error) {
	// Stat before opening: opening a named pipe blocks until a writer comes.
	fi, err := fs.Stat(fsys, "config.json")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: config.json is not a regular file (it is %s)", ErrConfig, boundedfile.Kind(fi.Mode()))
	}
	f, err := fsys.Open("config.json")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading config.json: %w", ErrConfig, err)
	}
	if len(data) > MaxConfigBytes {
		return nil, fmt.Errorf("%w: config.json is larger than %d bytes", ErrConfig, MaxConfigBytes)
	}
	return ParseRaw(data)
}

// ParseRaw parses the bytes of a config.json. The top level must be a JSON
// object; duplicate keys (at any depth) are refused because which one
// transformers would use is an accident of its parser, and so are bytes
// that are not UTF-8 (checkStrict).
func ParseRaw(data []byte) (*Raw, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: config.json is not valid JSON: %w", ErrConfig, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: config.json must hold a JSON object, found %v", ErrConfig, tok)
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: config.json is not valid JSON: %w", ErrConfig, err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%w: config.json: expected a key, found %v", ErrConfig, tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: config.json is not valid JSON at the value of %q: %w", ErrConfig, key, err)
		}
		if _, dup := fields[key]; dup {
			return nil, fmt.Errorf("%w: config.json: key %q appears twice", ErrConfig, key)
		}
		fields[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: config.json is not valid JSON: %w", ErrConfig, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: config.json has data after the top-level object", ErrConfig)
	}
	if err := checkStrict(data); err != nil {
		return nil, err
	}
	return &Raw{fields: fields}, nil
}

// Has reports whether key is present (even when null).
func (r *Raw) Has(key string) bool { _, ok := r.fields[key]; return ok }

// IsNull reports whether key is present with the value null.
func (r *Raw) IsNull(key string) bool {
	v, ok := r.fields[key]
	return ok && string(bytes.TrimSpace(v)) == "null"
}

// Set reports whether key is present and not null.
func (r *Raw) Set(key string) bool { return r.Has(key) && !r.IsNull(key) }

// Int returns an integer field. ok is false when the key is absent or null.
func (r *Raw) Int(key string) (v int, ok bool, err error) {
	if !r.Set(key) {
		return 0, false, nil
	}
	var n json.Number
	if err := unmarshalNumber(r.fields[key], &n); err != nil {
		return 0, false, fmt.Errorf("config.json: %s must be an integer, found %s", key, r.fields[key])
	}
	if !integerLiteral.MatchString(n.String()) {
		return 0, false, fmt.Errorf("config.json: %s must be an integer, found %s", key, n)
	}
	i, err := n.Int64()
	if err != nil || i > math.MaxInt32 || i < math.MinInt32 {
		// An integer all the same (beyond int64 too): say that it is out
		// of range, and where the range ends.
		return 0, false, &RangeError{Key: key, Text: n.String()}
	}
	return int(i), true, nil
}

// integerLiteral is a JSON number written as an integer (no fraction, no
// exponent): what transformers reads as a Python int.
var integerLiteral = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// RangeError is an integer field of config.json beyond the 32-bit range
// phase0 reads integers in: named with its limit, the sane limit of the
// Config field it fills (Limits) or the 32-bit bound.
type RangeError struct {
	Key  string
	Text string // the number as written
}

func (e *RangeError) Error() string {
	n := cutDigits(e.Text)
	limit, sane := IntLimit(e.Key)
	if strings.HasPrefix(e.Text, "-") {
		if sane {
			return fmt.Sprintf("config.json: %s is %s, out of range: it must be positive, at most %d", e.Key, n, limit)
		}
		return fmt.Sprintf("config.json: %s is %s, out of range: below the least 32-bit integer %d", e.Key, n, math.MinInt32)
	}
	if sane {
		return fmt.Sprintf("config.json: %s is %s, out of range: above the sane limit %d", e.Key, n, limit)
	}
	return fmt.Sprintf("config.json: %s is %s, out of range: above the greatest 32-bit integer %d", e.Key, n, math.MaxInt32)
}

// Positive says whether the number is above the range (rather than below).
func (e *RangeError) Positive() bool { return !strings.HasPrefix(e.Text, "-") }

// IntLimit is the greatest value config.json's integer field key may hold:
// the sane limit of the Config field it fills (sane true), else the
// greatest 32-bit integer.
func IntLimit(key string) (limit int, sane bool) {
	switch key {
	case "num_hidden_layers":
		return Limits.Layers, true
	case "hidden_size":
		return Limits.Dim, true
	case "num_attention_heads", "num_key_value_heads":
		return Limits.Heads, true
	case "head_dim":
		return Limits.HeadDim, true
	case "intermediate_size":
		return Limits.Hidden, true
	case "vocab_size":
		return Limits.Vocab, true
	}
	return math.MaxInt32, false
}

// Float returns a number field.
func (r *Raw) Float(key string) (v float64, ok bool, err error) {
	if !r.Set(key) {
		return 0, false, nil
	}
	return numberOf(key, r.fields[key])
}

func numberOf(key string, msg json.RawMessage) (float64, bool, error) {
	var n json.Number
	if err := unmarshalNumber(msg, &n); err != nil {
		return 0, false, fmt.Errorf("config.json: %s must be a number, found %s", key, msg)
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false, fmt.Errorf("config.json: %s must be a finite number, found %s", key, n)
	}
	return f, true, nil
}

// Bool returns a boolean field.
func (r *Raw) Bool(key string) (v bool, ok bool, err error) {
	if !r.Set(key) {
		return false, false, nil
	}
	if err := json.Unmarshal(r.fields[key], &v); err != nil {
		return false, false, fmt.Errorf("config.json: %s must be true or false, found %s", key, r.fields[key])
	}
	return v, true, nil
}

// String returns a string field.
func (r *Raw) String(key string) (v string, ok bool, err error) {
	if !r.Set(key) {
		return "", false, nil
	}
	if err := json.Unmarshal(r.fields[key], &v); err != nil {
		return "", false, fmt.Errorf("config.json: %s must be a string, found %s", key, r.fields[key])
	}
	return v, true, nil
}

// Strings returns a list-of-strings field.
func (r *Raw) Strings(key string) (v []string, ok bool, err error) {
	if !r.Set(key) {
		return nil, false, nil
	}
	if err := json.Unmarshal(r.fields[key], &v); err != nil {
		return nil, false, fmt.Errorf("config.json: %s must be a list of strings, found %s", key, r.fields[key])
	}
	return v, true, nil
}

// Object returns an object field as its own key → raw value map.
func (r *Raw) Object(key string) (v map[string]json.RawMessage, ok bool, err error) {
	if !r.Set(key) {
		return nil, false, nil
	}
	if err := json.Unmarshal(r.fields[key], &v); err != nil {
		return nil, false, fmt.Errorf("config.json: %s must be an object, found %s", key, r.fields[key])
	}
	return v, true, nil
}

// NumberText is a number field as written, cut when it is long (a
// 400-digit count).
func (r *Raw) NumberText(key string) string {
	return cutDigits(string(bytes.TrimSpace(r.fields[key])))
}

// cutDigits is a number's text as a message shows it: whole up to 24
// characters, else its first 20 and its length.
func cutDigits(n string) string {
	if len(n) > 24 {
		return fmt.Sprintf("%s… (%d characters)", n[:20], len(n))
	}
	return n
}

// Positive reports whether an integer field is present and greater than
// zero (an integer above the 32-bit range is: 2147483648 experts are
// experts).
func (r *Raw) Positive(key string) bool {
	v, ok, err := r.Int(key)
	if re := (*RangeError)(nil); errors.As(err, &re) {
		return re.Positive()
	}
	return err == nil && ok && v > 0
}

// unmarshalNumber decodes a JSON number. encoding/json would also accept a
// quoted string into json.Number; transformers would not treat "2" as 2.
func unmarshalNumber(msg json.RawMessage, n *json.Number) error {
	t := bytes.TrimSpace(msg)
	if len(t) == 0 || t[0] == '"' {
		return errors.New("not a number")
	}
	return json.Unmarshal(t, n)
}
