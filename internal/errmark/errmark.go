// Package errmark marks an error with a sentinel (errors.Is) while keeping
// its text and its chain: what a caller classifies by, never by the text.
package errmark

// With is an error whose text is msg, whose chain continues at cause (nil:
// none), and which errors.Is reports as mark.
func With(mark error, msg string, cause error) error {
	return &marked{msg: msg, cause: cause, mark: mark}
}

// Wrap marks err with mark, keeping err's text and chain.
func Wrap(mark, err error) error { return With(mark, err.Error(), err) }

type marked struct {
	msg         string
	cause, mark error
}

func (e *marked) Error() string        { return e.msg }
func (e *marked) Unwrap() error        { return e.cause }
func (e *marked) Is(target error) bool { return target == e.mark }
