// Package llmstree reads what an mlir-air programming_examples/llms tree says
// about its own model folders: which hub ids each folder names (its
// verify_adapter.py MODEL_CHOICES and its *_inference.py) and whether it
// holds a bf16 Phase 0 module. Folder names do not follow one rule from the
// id (Qwen/Qwen2.5-0.5B lives in qwen25_0_5b), so the tree, not a derivation,
// decides which folder a model belongs to. Python files are read as text,
// never imported.
package llmstree

import (
	"bytes"
	"strings"

	"phase0/read/hfcache"
)

// Bounds on one scanned file: upstream's largest *_inference.py is ~50 KiB.
const (
	maxLiteral   = 2*96 + 1 // "org/name": two parts of at most 96 characters
	maxIDsInFile = 64
)

// HubIDs returns the string literals of Python source src that are hub ids
// ("org/name", huggingface_hub's rules), in order of first appearance,
// without duplicates, at most maxIDsInFile. Comments are skipped; a literal
// counts only as a whole ("Qwen/Qwen3-0.6B", not a docstring mentioning
// it). The scan is one pass over src and allocates only for the ids.
func HubIDs(src []byte) []string {
	var ids []string
	for _, at := range hubIDsAt(src, nil) {
		ids = append(ids, at.ID)
	}
	return ids
}

// IDAt is a hub id and the 1-based line of src where it first appears.
type IDAt struct {
	ID   string
	Line int
}

// hubIDsAt is HubIDs with each id's line; keep (nil: every id) may refuse a
// literal given its line's text, before it counts against the bound.
func hubIDsAt(src []byte, keep func(id string, line []byte) bool) []IDAt {
	var ids []IDAt
	line, counted := 1, 0 // src[:counted] holds line-1 newlines
	add := func(lit []byte, at int) {
		if len(lit) > maxLiteral || len(ids) >= maxIDsInFile {
			return
		}
		s := string(lit)
		if strings.Count(s, "/") != 1 {
			return
		}
		ref, err := hfcache.ParseID(s)
		if err != nil || ref.Revision != "" {
			return
		}
		for _, have := range ids {
			if have.ID == s {
				return
			}
		}
		line += bytes.Count(src[counted:at], []byte("\n"))
		counted = at
		if keep != nil {
			start := bytes.LastIndexByte(src[:at], '\n') + 1
			end := bytes.IndexByte(src[at:], '\n')
			if end < 0 {
				end = len(src) - at
			}
			if !keep(s, src[start:at+end]) {
				return
			}
		}
		ids = append(ids, IDAt{ID: s, Line: line})
	}
	for i := 0; i < len(src); {
		switch c := src[i]; c {
		case '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case '"', '\'':
			lit, next := literal(src, i)
			if lit != nil {
				add(lit, i)
			}
			i = next
		default:
			i++
		}
	}
	return ids
}

// literal reads the string literal whose opening quote is at src[i] and
// returns its content (nil for an unterminated one) and the index after it.
// A single-quoted literal ends at its quote or, unterminated, at the end of
// the line; a triple-quoted one may span lines. A backslash escapes the next
// byte, which is also right for raw strings: r"\"" does not end at \".
func literal(src []byte, i int) ([]byte, int) {
	q := src[i]
	triple := i+2 < len(src) && src[i+1] == q && src[i+2] == q
	start := i + 1
	if triple {
		start = i + 3
	}
	for j := start; j < len(src); j++ {
		switch c := src[j]; {
		case c == '\\':
			j++
		case c == '\n' && !triple:
			return nil, j
		case c == q && !triple:
			return src[start:j], j + 1
		case c == q && j+2 < len(src) && src[j+1] == q && src[j+2] == q:
			return src[start:j], j + 3
		}
	}
	return nil, len(src)
}
