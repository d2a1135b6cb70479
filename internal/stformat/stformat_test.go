package stformat

import (
	"slices"
	"testing"
	"unsafe"
)

// TestDTypeName: each name DTypeSize knows, and only those, is listed, and
// a parsed copy of it comes back as the constant.
func TestDTypeName(t *testing.T) {
	for _, n := range []string{"BOOL", "U8", "I8", "F8_E4M3", "F8_E5M2", "F8_E8M0", "I16", "U16", "F16", "BF16",
		"I32", "U32", "F32", "I64", "U64", "F64", "F4", "bf16", "BF16 ", ""} {
		_, known := DTypeSize(n)
		i := slices.Index(dtypeNames[:], n)
		if known != (i >= 0) {
			t.Errorf("%q: DTypeSize knows it %t, listed at %d", n, known, i)
		}
		parsed := string([]byte(n))
		got := DTypeName(parsed)
		if got != n || (known && unsafe.StringData(got) != unsafe.StringData(dtypeNames[i])) {
			t.Errorf("DTypeName(%q) = %q, not the constant", n, got)
		}
	}
}
