package boundedfile

import (
	"strings"
	"testing"
)

func TestBounds(t *testing.T) {
	big := strings.Repeat("é", 5<<20) // 10 MB
	if q := Quote(big); len(q) > MaxQuoted+40 || !strings.HasSuffix(q, "… (10485760 bytes)") || strings.ContainsRune(q, '\uFFFD') {
		t.Errorf("Quote: %d bytes: %.100s", len(q), q)
	}
	if m := Message(big); len(m) > MaxMessage+40 || !strings.HasSuffix(m, "(message cut: 10485760 bytes)") || strings.ContainsRune(m, '\uFFFD') {
		t.Errorf("Message: %d bytes", len(m))
	}
	if Message("short") != "short" || Quote("a\x00b") != `"a\x00b"` {
		t.Error("short values are kept whole")
	}
	if TooLong("model", strings.Repeat("a", MaxArg)) != "" || TooLong("model", big) == "" {
		t.Error("TooLong's bound is MaxArg")
	}
}
