package errmark

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestMarkedKeepsTextAndChain(t *testing.T) {
	mark := errors.New("mark")
	cause := fmt.Errorf("reading x: %w", fs.ErrNotExist)
	err := Wrap(mark, cause)
	if err.Error() != cause.Error() {
		t.Errorf("text %q, want %q", err, cause)
	}
	if !errors.Is(err, mark) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("errors.Is: mark %v, cause %v; want both", errors.Is(err, mark), errors.Is(err, fs.ErrNotExist))
	}
	if errors.Is(err, errors.New("mark")) {
		t.Error("another error with the mark's text matched: Is must compare identity")
	}
	short := With(mark, "cut", nil)
	if short.Error() != "cut" || !errors.Is(short, mark) || errors.Unwrap(short) != nil {
		t.Errorf("With(mark, cut, nil) = %q, unwrap %v", short, errors.Unwrap(short))
	}
}
