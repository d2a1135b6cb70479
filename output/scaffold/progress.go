package scaffold

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"phase0/internal/atomicfile"
	"phase0/internal/boundedfile"
	"regexp"
	"strings"
)

// Markers around the Phase 0 entry phase0 owns in progress.md.
const (
	Phase0Begin = "<!-- phase0:begin -->"
	Phase0End   = "<!-- phase0:end -->"
)

// ErrTodoLayout is wrapped when TODO.md lacks the Phase 0 checkbox.
var ErrTodoLayout = errors.New("TODO.md does not have the expected layout")

const (
	blockerPrefix  = "- needs-human-review: "
	blockersHeader = "## Active blockers"
	// blockerMark ends every needs-human-review line phase0 writes: an HTML
	// comment, invisible in rendered Markdown and left alone by formatters,
	// that tells phase0's lines from a person's (which a PASS must keep).
	blockerMark = " <!-- phase0 -->"
)

var phase0Box = regexp.MustCompile(`(?m)^- \[[ xX]\] 0: Build CPU Reference[ \t]*$`)

// upsertPhase0Entry puts entryMarkdown between the phase0 markers in
// progress.md (Phase0Entry) and writes it.
func upsertPhase0Entry(progressPath, entryMarkdown string) error {
	text, err := readText(progressPath)
	if err != nil {
		return err
	}
	out, err := Phase0Entry(text, progressPath, entryMarkdown)
	if err != nil {
		return err
	}
	return writeTracked(progressPath, []byte(out))
}

// Phase0Entry is progress.md's text (read from progressPath, named in
// errors) with entryMarkdown between the phase0 markers: it replaces the
// previous entry, or appends one. Everything outside the markers is kept
// byte for byte.
func Phase0Entry(text, progressPath, entryMarkdown string) (string, error) {
	block := Phase0Begin + "\n" + strings.TrimSpace(entryMarkdown) + "\n" + Phase0End + "\n"
	begin := strings.Index(text, Phase0Begin)
	end := strings.Index(text, Phase0End)
	switch {
	case begin < 0 && end < 0:
		out := text
		if out != "" {
			out = strings.TrimRight(out, "\n") + "\n\n"
		}
		return out + block, nil
	case begin >= 0 && end > begin:
		if strings.Count(text, Phase0Begin) > 1 || strings.Count(text, Phase0End) > 1 {
			return "", fmt.Errorf("scaffold: %s has more than one phase0 entry; keep one pair of %s / %s markers",
				progressPath, Phase0Begin, Phase0End)
		}
		rest := strings.TrimPrefix(text[end+len(Phase0End):], "\n")
		return text[:begin] + block + rest, nil
	default:
		return "", fmt.Errorf("scaffold: %s has unbalanced phase0 markers (%s at %d, %s at %d); fix them by hand",
			progressPath, Phase0Begin, begin, Phase0End, end)
	}
}

// setPhase0Status records the Phase 0 outcome in TODO.md (Phase0Status)
// and writes it.
func setPhase0Status(todoPath string, pass bool, blockers []string) error {
	text, err := readText(todoPath)
	if err != nil {
		return err
	}
	out, err := Phase0Status(text, todoPath, pass, blockers, WrittenByPhase0(todoPath, []byte(text)))
	if err != nil {
		return err
	}
	return writeTracked(todoPath, []byte(out))
}

// Phase0Status is TODO.md's text (read from todoPath, named in errors) with
// the Phase 0 outcome recorded. On pass it ticks "0: Build CPU Reference"
// and removes the needs-human-review lines an earlier failed run left; on
// failure it unticks the box and lists one "needs-human-review: <reason>"
// line per blocker under "## Active blockers" (creating that section when
// missing). Only lines phase0 wrote are removed: they end in blockerMark,
// or, when ours says the whole file is as phase0 last wrote it (an older
// phase0 wrote them unmarked), they carry the prefix. A person's
// needs-human-review line, and every other line, is kept as it is.
func Phase0Status(text, todoPath string, pass bool, blockers []string, ours bool) (string, error) {
	if !phase0Box.MatchString(text) {
		return "", fmt.Errorf("%w: %s has no \"- [ ] 0: Build CPU Reference\" line", ErrTodoLayout, todoPath)
	}
	box := "- [ ] 0: Build CPU Reference"
	if pass {
		box = "- [x] 0: Build CPU Reference"
	}
	text = phase0Box.ReplaceAllLiteralString(text, box)
	text = removeBlockerLines(text, ours)
	if !pass {
		if len(blockers) == 0 {
			blockers = []string{"Phase 0 failed without a recorded reason"}
		}
		var lines strings.Builder
		for _, b := range blockers {
			lines.WriteString(blockerPrefix + strings.Join(strings.Fields(b), " ") + blockerMark + "\n")
		}
		text = insertUnderHeader(text, blockersHeader, lines.String())
	}
	return text, nil
}

// phase0Blocker says whether line is a needs-human-review line phase0
// wrote: marked, or (legacy: the file is phase0's own) any with the prefix.
func phase0Blocker(line string, legacy bool) bool {
	if !strings.HasPrefix(line, blockerPrefix) {
		return false
	}
	return legacy || strings.HasSuffix(strings.TrimRight(line, "\r\n"), blockerMark)
}

// removeBlockerLines drops the needs-human-review lines phase0 wrote, and
// the blank line that separated them from the next section.
func removeBlockerLines(text string, legacy bool) string {
	lines := strings.SplitAfter(text, "\n")
	var kept []string
	for i := 0; i < len(lines); i++ {
		if !phase0Blocker(lines[i], legacy) {
			kept = append(kept, lines[i])
			continue
		}
		lastRemoved := i+1 >= len(lines) || !phase0Blocker(lines[i+1], legacy)
		if lastRemoved && i+1 < len(lines) && lines[i+1] == "\n" && len(kept) > 0 && kept[len(kept)-1] == "\n" {
			i++
		}
	}
	return strings.Join(kept, "")
}

// insertUnderHeader adds lines right after the header line (and the blank
// line after it), appending the section when the header is missing.
func insertUnderHeader(text, header, lines string) string {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(header) + `[ \t]*\n`)
	loc := re.FindStringIndex(text)
	if loc == nil {
		if text != "" {
			text = strings.TrimRight(text, "\n") + "\n\n"
		}
		return text + header + "\n\n" + lines
	}
	at := loc[1]
	if strings.HasPrefix(text[at:], "\n") {
		at++
	} else {
		lines = "\n" + lines
	}
	rest := text[at:]
	if rest != "" && !strings.HasPrefix(rest, "\n") && !strings.HasPrefix(rest, blockerPrefix) &&
		!strings.HasPrefix(rest, "- ") {
		lines += "\n"
	}
	return text[:at] + lines + rest
}

// ReadDoc is a document's text ("" when it does not exist).
func ReadDoc(p string) (string, error) { return readText(p) }

// maxDoc bounds TODO.md and progress.md: upstream's are a few KiB, so a
// larger one is not a document phase0 should rewrite.
const maxDoc = 4 << 20

func readText(p string) (string, error) {
	data, err := boundedfile.Read(p, maxDoc)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("scaffold: read %s: %w", p, err)
	}
	return string(data), nil
}

// writeTracked writes p atomically and, when p lies inside a workspace with
// a phase0 manifest, records the new content as phase0's own.
func writeTracked(p string, data []byte) error {
	if err := atomicfile.Write(p, data); err != nil {
		return err
	}
	ws, rel, ok := findWorkspace(p)
	if !ok {
		return nil
	}
	return RecordWrite(ws, rel, data)
}

// findWorkspace looks for the manifest in the file's directory and up to
// three levels above it (progress.md sits in docs/development_progress/).
func findWorkspace(p string) (workspace, rel string, ok bool) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", "", false
	}
	dir := filepath.Dir(abs)
	for range 4 {
		if _, err := os.Stat(filepath.Join(dir, ManifestName)); err == nil {
			r, err := filepath.Rel(dir, abs)
			if err != nil {
				return "", "", false
			}
			return dir, filepath.ToSlash(r), true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", "", false
}

// HasPhaseChecklist says whether the TODO.md at todoPath holds the skill's
// "0: Build CPU Reference" checkbox (false when there is no TODO.md).
func HasPhaseChecklist(todoPath string) (bool, error) {
	text, err := readText(todoPath)
	if err != nil {
		return false, err
	}
	return phase0Box.MatchString(text), nil
}
