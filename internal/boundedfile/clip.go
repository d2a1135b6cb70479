// Bounded messages: what a message repeats of a value it was given (a
// pasted file as a setting, a 10 MB model argument, a list line) is cut, and
// its length said; a message never grows with the input.

package boundedfile

import (
	"fmt"
	"strconv"
)

// MaxQuoted bounds how much of a value Quote repeats.
const MaxQuoted = 64

// MaxArg is the longest path or hub id phase0 takes (Linux's PATH_MAX):
// a longer model argument, list line or file flag is refused, cut, before
// any message or report repeats it.
const MaxArg = 4096

// MaxMessage bounds one printed error message.
const MaxMessage = 8 << 10

// Quote is s as a message shows it: quoted, and cut after MaxQuoted bytes
// (at a character boundary) with its length.
func Quote(s string) string {
	if len(s) <= MaxQuoted {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:boundary(s, MaxQuoted)]), len(s))
}

// Message is msg cut after MaxMessage bytes, saying how long it was.
func Message(msg string) string {
	if len(msg) <= MaxMessage {
		return msg
	}
	return fmt.Sprintf("%s… (message cut: %d bytes)", msg[:boundary(msg, MaxMessage)], len(msg))
}

// Cut is s cut after MaxArg bytes, marked with "…": a value a report must
// still name (the model of a refused invocation) without repeating all of it.
func Cut(s string) string {
	if len(s) <= MaxArg {
		return s
	}
	return s[:boundary(s, MaxArg)] + "…"
}

// TooLong says why s, given as what, is refused when it is longer than
// MaxArg; "" when it is not.
func TooLong(what, s string) string {
	if len(s) <= MaxArg {
		return ""
	}
	return fmt.Sprintf("%s %s is longer than any path or hub id (at most %d bytes)", what, Quote(s), MaxArg)
}

// boundary is the largest cut ≤ n that does not split a UTF-8 character.
func boundary(s string, n int) int {
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return n
}
