package safetensors

import "phase0/internal/stformat"

// DTypeSize returns the element size in bytes of a safetensors dtype name
// and whether the name is known.
func DTypeSize(dtype string) (int64, bool) { return stformat.DTypeSize(dtype) }
