package settings

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"phase0/internal/boundedfile"
)

// The one parser of setting values. A flag, a PHASE0_* variable, a --config
// file's key and a Python keyword option all reach Parse as a Value, so each
// is held to the same rules: base-10 integers only, finite decimal numbers,
// durations with a unit, true or false, one scalar where a scalar goes, and
// every number inside its row's Range before anything is sized by it.

// Form is how a source wrote a value.
type Form int

const (
	// FormText is a flag's or variable's text, a quoted YAML string, a Python str.
	FormText Form = iota
	// FormNumber is an unquoted YAML number, a Python int or float (JSON number).
	FormNumber
	// FormBool is an unquoted YAML true/false, a Python bool.
	FormBool
	// FormNull is YAML's null (an empty value, ~).
	FormNull
	// FormList is a YAML sequence, a Python list.
	FormList
	// FormMap is a YAML mapping, a Python dict.
	FormMap
)

func (f Form) String() string {
	return [...]string{"text", "number", "bool", "null", "list", "map"}[f]
}

// Value is one source's value of a setting, as the source wrote it.
type Value struct {
	Text string // the scalar's text exactly as written; "" for a list or map
	Form Form
	// Tagged is a YAML scalar with an explicit tag (`!!str 7`): the tag says
	// what the value is, so a string-tagged one is never read as a number or
	// a bool (docs/settings.md).
	Tagged bool
}

// TextValue is a Value given as text (a flag, an environment variable).
func TextValue(s string) Value { return Value{Text: s, Form: FormText} }

// ErrValue marks a value its setting does not accept.
var ErrValue = errors.New("invalid setting value")

// ValueError says what a value is and what the setting takes. It names
// neither the setting nor the source: the caller, who knows where the value
// came from, prefixes both.
type ValueError struct {
	Value Value
	Want  string // "a base-10 integer in [0, 1024]"
	Hint  string // what to do, when the value's form is the trouble
}

func (e *ValueError) Error() string {
	var msg string
	switch {
	case e.Value.Form == FormList || e.Value.Form == FormMap:
		msg = fmt.Sprintf("a %s is not %s: give one value", e.Value.Form, e.Want)
	case e.Value.Form == FormNull:
		msg = fmt.Sprintf("an empty (null) value is not %s", e.Want)
	case e.Value.Form == FormBool && e.Want != wantBool:
		msg = fmt.Sprintf("the bool %s is not %s", e.Value.Text, e.Want)
	case e.Value.Form == FormNumber && e.Hint != "":
		msg = fmt.Sprintf("the number %s is not %s", Quote(e.Value.Text), e.Want)
	default:
		msg = fmt.Sprintf("%s is not %s", Quote(e.Value.Text), e.Want)
	}
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

func (e *ValueError) Unwrap() error { return ErrValue }

// Quote is s as a message shows it: quoted, and cut after boundedfile.MaxQuoted
// bytes (a 400-digit number, a pasted file).
func Quote(s string) string { return boundedfile.Quote(s) }

// Range is a Count's, Duration's or Ratio's least and greatest value, both
// allowed, written as values of the kind.
type Range struct{ Min, Max string }

func (r Range) String() string { return "[" + r.Min + ", " + r.Max + "]" }

const wantBool = "true or false"

var (
	// base-10, an optional minus (a range then refuses it) but no -0 (as
	// no +3), no leading zero (YAML 1.1 and Python 2 read 010 as octal), no
	// '+', '_', space or prefix.
	integerText = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)
	// a decimal number: digits on both sides of a point, an optional exponent.
	decimalText = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
)

// Want is what the setting takes, as messages and the docs say it.
func (s Setting) Want() string {
	switch s.Kind {
	case Bool:
		return wantBool
	case Count:
		return "a base-10 integer in " + s.Range.String()
	case Ratio:
		return "a finite decimal number in " + s.Range.String()
	case Duration:
		return "a duration with a unit (such as 90s or 30m) in " + s.Range.String()
	}
	if len(s.Choices) > 0 {
		quoted := make([]string, len(s.Choices))
		for i, c := range s.Choices {
			quoted[i] = strconv.Quote(c)
		}
		return "one of " + strings.Join(quoted, ", ")
	}
	return "a string"
}

// Parse reads v as the setting's value, of its Kind's Go type: bool, int,
// float64, time.Duration, or string (Text, Path, Lines). An error is a
// *ValueError.
func (s Setting) Parse(v Value) (any, error) {
	bad := &ValueError{Value: v, Want: s.Want()}
	if v.Tagged && v.Form == FormText && (s.Kind == Bool || s.Kind == Count || s.Kind == Ratio) {
		return nil, &ValueError{Value: v, Want: s.Want(), Hint: "its !!str tag makes it a string; drop the tag"}
	}
	switch v.Form {
	case FormList, FormMap:
		return nil, bad
	case FormNull:
		if s.Kind == Text || s.Kind == Path || s.Kind == Lines {
			v = TextValue("") // an empty YAML value is the empty string
		} else {
			return nil, bad
		}
	}
	switch s.Kind {
	case Bool:
		if v.Form != FormText && v.Form != FormBool {
			return nil, bad
		}
		switch v.Text {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, bad
	case Count:
		if v.Form != FormText && v.Form != FormNumber || !integerText.MatchString(v.Text) {
			return nil, bad
		}
		lo, hi, err := s.countRange()
		if err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(v.Text, 10, 64)
		if err != nil || n < lo || n > hi {
			return nil, bad // err: beyond int64, so beyond any range
		}
		return int(n), nil
	case Ratio:
		if v.Form != FormText && v.Form != FormNumber || !decimalText.MatchString(v.Text) {
			return nil, bad
		}
		lo, hi, err := s.ratioRange()
		if err != nil {
			return nil, err
		}
		x, err := strconv.ParseFloat(v.Text, 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) || x < lo || x > hi {
			return nil, bad // err: 1e400 parses as +Inf with ErrRange
		}
		return x, nil
	case Duration:
		if v.Form != FormText {
			return nil, bad // a bare YAML number has no unit: never nanoseconds
		}
		lo, hi, err := s.durationRange()
		if err != nil {
			return nil, err
		}
		d, err := parseDuration(v.Text)
		if err != nil || d < lo || d > hi {
			return nil, bad
		}
		return d, nil
	}
	return s.parseText(v, bad)
}

// parseText reads v as a Text, Path or Lines setting's value: a YAML
// string, without a NUL, a path no longer than any path, one of the
// choices when the setting has them.
func (s Setting) parseText(v Value, bad *ValueError) (any, error) {
	if v.Form != FormText {
		return nil, &ValueError{Value: v, Want: s.Want(), Hint: "in a YAML file, quote it"}
	}
	if i := strings.IndexByte(v.Text, 0); i >= 0 {
		// A NUL ends the C string a path travels in: the file opened would
		// be another one, and a message would print the raw byte.
		return nil, &ValueError{Value: v, Want: s.Want() + " without a NUL character",
			Hint: fmt.Sprintf("it holds a NUL at byte %d; no path or text setting can contain one", i)}
	}
	if s.Kind == Path && len(v.Text) > boundedfile.MaxArg {
		return nil, &ValueError{Value: v, Want: s.Want(), Hint: fmt.Sprintf("longer than any path: at most %d bytes", boundedfile.MaxArg)}
	}
	if len(s.Choices) > 0 && !slices.Contains(s.Choices, v.Text) {
		return nil, bad
	}
	return v.Text, nil
}

// parseDuration is time.ParseDuration without what the strict parser
// refuses elsewhere: a sign, spaces, a bare number.
func parseDuration(s string) (time.Duration, error) {
	if s == "" || s[0] == '+' || s[0] == '-' || strings.TrimSpace(s) != s {
		return 0, fmt.Errorf("%q: want a duration such as 90s", s)
	}
	return time.ParseDuration(s)
}

// The range's ends, parsed as the kind's values; an error is a bad row
// (TestTableRows keeps every row's ends parseable).
func (s Setting) countRange() (lo, hi int64, err error) {
	lo, err1 := strconv.ParseInt(s.Range.Min, 10, 64)
	hi, err2 := strconv.ParseInt(s.Range.Max, 10, 64)
	if err := errors.Join(err1, err2); err != nil || lo > hi {
		return 0, 0, fmt.Errorf("setting %s: range %v is not two ordered integers: %w", s.Key, s.Range, err)
	}
	return lo, hi, nil
}

func (s Setting) ratioRange() (lo, hi float64, err error) {
	lo, err1 := strconv.ParseFloat(s.Range.Min, 64)
	hi, err2 := strconv.ParseFloat(s.Range.Max, 64)
	if err := errors.Join(err1, err2); err != nil || !(lo <= hi) {
		return 0, 0, fmt.Errorf("setting %s: range %v is not two ordered numbers: %w", s.Key, s.Range, err)
	}
	return lo, hi, nil
}

func (s Setting) durationRange() (lo, hi time.Duration, err error) {
	lo, err1 := parseDuration(s.Range.Min)
	hi, err2 := parseDuration(s.Range.Max)
	if err := errors.Join(err1, err2); err != nil || lo > hi {
		return 0, 0, fmt.Errorf("setting %s: range %v is not two ordered durations: %w", s.Key, s.Range, err)
	}
	return lo, hi, nil
}

// FlagType is the argument's name in --help: int, float, duration, bool or
// string.
func (k Kind) FlagType() string {
	switch k {
	case Bool:
		return "bool"
	case Count:
		return "int"
	case Ratio:
		return "float"
	case Duration:
		return "duration"
	}
	return "string"
}
