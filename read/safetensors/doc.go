// Package safetensors reads what phase0 needs from HuggingFace safetensors
// checkpoints without loading tensor data: each file's header, the sharded
// index, a whole-folder inventory, and a parallel NaN/Inf scan over the raw
// bytes. Tests and benchmarks write checkpoints with package internal/sttest.
//
// Every length and offset read from a file is checked against the file size
// before it is used; malformed input yields a *FormatError or one of the
// sentinel errors below, never a panic.
package safetensors
