// Package pyshim carries the Python side of phase0 (the phase0_shim package)
// inside the binary, so bin/phase0 works from any directory.
package pyshim

import "embed"

// FS holds phase0_shim's sources, prompts and data files.
//
//go:embed phase0_shim/*.py phase0_shim/quant/*.py phase0_shim/py.typed phase0_shim/prompts/*.txt
var FS embed.FS
