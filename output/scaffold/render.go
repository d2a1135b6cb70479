package scaffold

import (
	"bytes"
	"embed"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/template"
	"unicode"
	"unicode/utf8"

	"phase0/read/model"
)

//go:embed templates/*.tmpl
var templateFS embed.FS

// File is one rendered workspace file.
type File struct {
	Path string // slash-separated, relative to the workspace directory
	Data []byte
	// KeepExisting marks documents that people and later phases append to
	// (TODO.md, progress.md …): they are created when absent and never
	// replaced afterwards, with or without force.
	KeepExisting bool
}

type fileTemplate struct {
	template     string
	path         func(Spec) string
	keepExisting bool
}

var fileTemplates = []fileTemplate{
	{"weights.py.tmpl", func(s Spec) string { return s.Name + "_weights.py" }, false},
	{"cpu_helpers.py.tmpl", func(s Spec) string { return s.Name + "_cpu_helpers.py" }, false},
	{"TODO.md.tmpl", func(Spec) string { return "TODO.md" }, true},
	{"README.md.tmpl", func(Spec) string { return "README.md" }, true},
	{"progress.md.tmpl", func(Spec) string { return "docs/development_progress/progress.md" }, true},
	{"LESSONS.md.tmpl", func(Spec) string { return "docs/development_progress/LESSONS.md" }, true},
	{"debug_log.md.tmpl", func(Spec) string { return "docs/development_progress/debug_log.md" }, true},
	{"phase_timing.md.tmpl", func(Spec) string { return "docs/development_progress/" + PhaseTimingName }, true},
	{"gitignore.tmpl", func(Spec) string { return ".gitignore" }, true},
}

var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"pyFloat":       pyFloat,
	"pyBool":        pyBool,
	"pyAssign":      pyAssign,
	"pyDoc":         pyDoc,
	"helpersKept":   HelpersKept,
	"join":          strings.Join,
	"mul":           func(a, b int) int { return a * b },
	"div":           func(a, b int) int { return a / b },
	"unaligned1024": unaligned1024,
	"modelDirEnv":   func() string { return ModelDirEnv },
}).Option("missingkey=error").ParseFS(templateFS, "templates/*.tmpl"))

// Render produces every workspace file for spec, in a fixed order.
func Render(spec Spec) ([]File, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	files := make([]File, 0, len(fileTemplates))
	for _, ft := range fileTemplates {
		var buf bytes.Buffer
		if err := templates.ExecuteTemplate(&buf, ft.template, spec); err != nil {
			return nil, fmt.Errorf("render %s for %s: %w", ft.template, spec.ModelID, err)
		}
		files = append(files, File{Path: ft.path(spec), Data: buf.Bytes(), KeepExisting: ft.keepExisting})
	}
	return files, nil
}

// pyFloat formats f the way Python's repr does, so generated literals read
// like hand-written ones (500000.0, 1e-05, 1000000.0), in black's spelling.
func pyFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return fmt.Sprintf("float(%q)", strconv.FormatFloat(f, 'g', -1, 64))
	}
	exp := 0
	if f != 0 {
		exp = int(math.Floor(math.Log10(math.Abs(f))))
	}
	if exp < -4 || exp >= 16 {
		// Python writes a two-digit exponent minimum, as Go does; black
		// drops the "+" of a positive exponent (1e16, not repr's 1e+16).
		return strings.Replace(strconv.FormatFloat(f, 'e', -1, 64), "e+", "e", 1)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// blackLineLength is black's default line length, which mlir-air's CI runs
// with (the tree has no black configuration).
const blackLineLength = 88

// pyAssign writes `target = "value"` as black lays it out, so the file stays
// black-clean whatever the value's length: on one line when it fits; else the
// string alone on a line inside parentheses, except that black keeps an
// unannotated assignment on one line when the string would not fit there
// either. Values are checked single-line text without quotes or backslashes
// (Spec.validate).
func pyAssign(target, value string) string {
	literal := pyString(value)
	line := target + " = " + literal
	if pyWidth(line) <= blackLineLength {
		return line
	}
	annotated := strings.Contains(target, ":")
	if !annotated && 4+pyWidth(literal) > blackLineLength {
		return line
	}
	return target + " = (\n    " + literal + "\n)"
}

// pyString is value as the Python string literal black writes: double
// quotes, unless single quotes need fewer escapes (a local folder named
// my"model is 'my"model'). Values hold no backslash or newline
// (Spec.validate).
func pyString(value string) string {
	if strings.Count(value, "'") < strings.Count(value, `"`) {
		return "'" + strings.ReplaceAll(value, "'", `\'`) + "'"
	}
	return `"` + strings.ReplaceAll(value, `"`, `\"`) + `"`
}

// pyDoc is text inside a generated docstring: a '"' escaped, so a name
// holding one (or three) never ends the docstring.
func pyDoc(text string) string { return strings.ReplaceAll(text, `"`, `\"`) }

// pyWidth is a line's width as black measures it: East Asian wide and
// full-width characters take two columns, combining marks none.
func pyWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			n++
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
		case isWide(r):
			n += 2
		default:
			n++
		}
	}
	return n
}

// isWide reports the East Asian Wide and Fullwidth ranges a file or folder
// name may plausibly hold (CJK, Hangul, kana, full-width forms, emoji).
func isWide(r rune) bool {
	for _, w := range [][2]rune{
		{0x1100, 0x115F}, {0x2E80, 0x303E}, {0x3041, 0x33FF}, {0x3400, 0x4DBF}, {0x4E00, 0x9FFF},
		{0xA000, 0xA4CF}, {0xAC00, 0xD7A3}, {0xF900, 0xFAFF}, {0xFE30, 0xFE4F}, {0xFF00, 0xFF60},
		{0xFFE0, 0xFFE6}, {0x1F300, 0x1F64F}, {0x1F900, 0x1F9FF}, {0x20000, 0x3FFFD},
	} {
		if r >= w[0] && r <= w[1] {
			return true
		}
	}
	return false
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// unaligned1024 lists the GEMM dimensions Phase 2 must pad because they are
// not multiples of 1024 ("emb_dim 896 (next multiple 1024)").
func unaligned1024(c model.Config) []string {
	var out []string
	for _, d := range []struct {
		name string
		v    int
	}{{"emb_dim", c.EmbDim}, {"hidden_dim", c.HiddenDim}} {
		if d.v%1024 != 0 {
			out = append(out, fmt.Sprintf("%s %d (next multiple %d)", d.name, d.v, (d.v/1024+1)*1024))
		}
	}
	return out
}
