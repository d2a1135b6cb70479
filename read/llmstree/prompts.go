package llmstree

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"phase0/internal/boundedfile"
)

// MaxPromptFile bounds a prompt file, as phase0_shim/prompts.py does:
// upstream's are a few hundred bytes.
const MaxPromptFile = 1 << 20

// PromptFiles are the tree's prompt files, one per prompt style: gate 2's
// canonical prompt is the first prompt line of the style's file, and the
// recorded reference covers all of its lines.
var PromptFiles = []string{"verify/prompts/base.txt", "verify/prompts/instruct.txt"}

// CheckPrompts refuses, before any Python runs, a prompt file of the tree
// at llms that the worker could not read: it is the tree's input, not the
// model's fault (docs/gates.md, bounds). Each must be a regular file (a
// FIFO is refused without being opened for long) of at most MaxPromptFile
// bytes of UTF-8 holding at least one prompt line (not blank, not a `#`
// comment).
func CheckPrompts(llms string) error {
	for _, rel := range PromptFiles {
		path := filepath.Join(llms, filepath.FromSlash(rel))
		data, err := boundedfile.Read(path, MaxPromptFile)
		if err != nil {
			return fmt.Errorf("prompt file of the llms tree: %w", err)
		}
		if !utf8.Valid(data) {
			off := 0
			for off < len(data) {
				r, n := utf8.DecodeRune(data[off:])
				if r == utf8.RuneError && n <= 1 {
					break
				}
				off += n
			}
			return fmt.Errorf("prompt file of the llms tree: %s is not UTF-8 text (invalid byte 0x%02x at offset %d)", path, data[off], off)
		}
		if !hasPrompt(string(data)) {
			return fmt.Errorf("prompt file of the llms tree: %s holds no prompt (every line is blank or a # comment)", path)
		}
	}
	return nil
}

// hasPrompt says whether text has a line read_prompts keeps.
func hasPrompt(text string) bool {
	for line := range strings.Lines(text) {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			return true
		}
	}
	return false
}
