// Package safetensors reads what phase0 needs from HuggingFace safetensors
// checkpoints without loading tensor data: each file's header, the sharded
// index, a whole-folder inventory, and a parallel NaN/Inf scan over the raw
// bytes. It also writes small (or sparse) checkpoints for tests and benchmarks.
//
// Every length and offset read from a file is checked against the file size
// before it is used; malformed input yields a *FormatError or one of the
// sentinel errors below, never a panic.
package safetensors
