// Package wire is the worker's op contract: every op's name, and every
// struct that crosses the boundary between Go and the Python worker, as
// arguments and results, to every depth. The gates judge these types and
// python/ops sends and receives them; nothing here judges or runs anything.
//
// The rule for a key (Fields): a json tag names it, and the tag's omitempty
// option marks it optional (the key may be absent); every other key is
// required, with null a value only of pointer, slice and map fields. The
// worker's TypedDicts (python/pyshim/phase0_shim/optypes.py) are generated
// from these types (PythonFile); a py tag says what Go cannot: py:"null" for
// a slice or map the other side may send as null, py:"literal=a|b" for a
// string that takes only those values. docs/ARCHITECTURE.md describes the
// boundary.
package wire
