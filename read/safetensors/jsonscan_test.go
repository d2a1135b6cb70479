package safetensors

import (
	"math/rand/v2"
	"testing"
)

// TestSpecial checks the word-at-a-time search against a byte loop, on
// random bytes drawn mostly from near the bytes it looks for, at every
// alignment and length.
func TestSpecial(t *testing.T) {
	naive := func(b []byte) int {
		for i, c := range b {
			if c == '"' || c == '\\' || c < 0x20 {
				return i
			}
		}
		return len(b)
	}
	pool := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, '"', '#', '[', '\\', ']', 'a', 0x7f, 0x80, 0x9f, 0xa0, 0xdc, 0xff}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 64)
	for range 200_000 {
		n := rng.IntN(len(buf) + 1)
		for i := range n {
			buf[i] = pool[rng.IntN(len(pool))]
			if rng.IntN(4) != 0 { // mostly plain bytes, so matches come late
				buf[i] = 'a' + byte(rng.IntN(26))
			}
		}
		if got, want := special(buf[:n]), naive(buf[:n]); got != want {
			t.Fatalf("special(%q) = %d, want %d", buf[:n], got, want)
		}
	}
}
