package settings

import (
	"fmt"
	"reflect"
	"strings"
)

// Kind is how a setting's value is parsed (cmd/internal/cli) and stamped
// (orchestrator's reuse inputs).
type Kind int

const (
	// Text is any string.
	Text Kind = iota
	// Path is a file or folder; as a reuse input it is made absolute.
	Path
	// Bool is true or false.
	Bool
	// Count is a base-10 integer in Setting.Range.
	Count
	// Duration is a Go duration with a unit (90s, 30m, 1h30m) in Setting.Range.
	Duration
	// Ratio is a finite decimal number (0.1, 2e-3) in Setting.Range.
	Ratio
	// Lines is text whose lines become generated comment lines (scaffold.LicenseLines).
	Lines
)

// Root names the phase0 command itself in Setting.Commands: the flag is a
// persistent one that every command takes.
const Root = "phase0"

// Setting is one row of the settings table: everything about one setting,
// declared once. The cobra flags, the PHASE0_* variables, the keys a --config
// file or a Python option may set, the orchestrator.Settings field each
// fills, and the settings a recorded verdict depends on are all read from
// Table; tests check run/settings/default.yaml, the README's configuration table
// and the Python API's keyword options against it.
type Setting struct {
	// Key is the YAML key (dotted inside a section:
	// cpu_helpers.attention_fallback) and the Python API's option name.
	Key string
	// Field is the orchestrator.Settings field the value fills.
	Field string
	// Flag is the command-line flag without "--"; "" when there is none.
	Flag string
	// Commands are the commands that take Flag (Root: every command).
	Commands []string
	Kind     Kind
	// Range bounds a Count, Duration or Ratio: both ends allowed, each
	// written as a value of the kind ("0", "1s", "0.0001"). Values are
	// checked against it before anything is sized by them.
	Range Range
	// Choices, when set, are the only values a Text setting may take.
	Choices []string
	// Default is the value as run/settings/default.yaml writes it.
	Default string
	// Verdict marks a setting that can change a verdict or where it is
	// recorded: a reuse input of `run`.
	Verdict bool
	// Doc is the flag's usage and the README's meaning (plain text).
	Doc string
}

// Env is the setting's environment variable: PHASE0_ and the key in capitals,
// dots and dashes as underscores.
func (s Setting) Env() string { return EnvName(s.Key) }

// EnvName is the PHASE0_* variable of a settings key.
func EnvName(key string) string {
	return "PHASE0_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

// Usage is the flag's help line: Doc, the range of a number, and the
// default unless it is empty or false.
func (s Setting) Usage() string {
	var notes []string
	if s.Range != (Range{}) {
		notes = append(notes, "in "+s.Range.String())
	}
	if s.Default != "" && !(s.Kind == Bool && s.Default == "false") {
		notes = append(notes, "default "+s.Default)
	}
	if len(notes) == 0 {
		return s.Doc
	}
	return s.Doc + " (" + strings.Join(notes, "; ") + ")"
}

// On says whether command takes the setting's flag.
func (s Setting) On(command string) bool {
	if s.Flag == "" {
		return false
	}
	for _, c := range s.Commands {
		if c == command || c == Root {
			return true
		}
	}
	return false
}

// The commands, for Setting.Commands.
var (
	modelCommands  = []string{"inspect", "baseline", "run", "reference"}
	pythonCommands = []string{"baseline", "run", "reference"}
	workspaceCmds  = []string{"run", "reference"}
)

// Table is every setting, in run/settings/default.yaml's order.
var Table = []Setting{
	{Key: "llms_dir", Field: "LLMSDir", Flag: "llms-dir", Commands: append([]string{"preflight"}, pythonCommands...), Kind: Path, Verdict: true,
		Doc: "mlir-air programming_examples/llms folder; must hold verify/runners/hf_runner.py and verify/prompts/ (empty: the bundled runner)"},
	{Key: "out_dir", Field: "OutDir", Flag: "out-dir", Commands: []string{"run"}, Kind: Path, Verdict: true,
		Doc: "folder for <name>/ when there is no llms_dir (empty: ./workspace, with the bundled runner)"},
	{Key: "python", Field: "Python", Flag: "python", Commands: append([]string{"preflight"}, pythonCommands...), Kind: Path,
		Doc: "python of the venv holding torch + transformers (empty: the venv make built phase0 for)"},
	{Key: "name", Field: "Name", Flag: "name", Commands: workspaceCmds, Kind: Text, Verdict: true,
		Doc: "workspace name (empty: derived from the model id)"},
	{Key: "prompt_style", Field: "PromptStyle", Flag: "prompt-style", Commands: pythonCommands, Kind: Text, Choices: []string{"", "base", "instruct"}, Verdict: true,
		Doc: "base or instruct (empty: instruct when the model's own name says instruct, it or chat)"},
	{Key: "prompt", Field: "Prompt", Flag: "prompt", Commands: pythonCommands, Kind: Text, Verdict: true,
		Doc: "prompt text (overrides the canonical prompt file)"},
	{Key: "decode", Field: "Decode", Flag: "decode", Commands: pythonCommands, Kind: Count, Range: Range{"0", "4096"}, Default: "0", Verdict: true,
		Doc: "greedy continuation tokens to show after the prefill (at most max_seq)"},
	{Key: "reference_steps", Field: "ReferenceSteps", Flag: "reference-steps", Commands: workspaceCmds, Kind: Count, Range: Range{"0", "1024"}, Default: "32", Verdict: true,
		Doc: "greedy tokens per prompt in the recorded reference (0: run records none; reference needs at least 1)"},
	{Key: "max_seq", Field: "MaxSeq", Kind: Count, Range: Range{"1", "32768"}, Default: "64", Verdict: true,
		Doc: "max_seq passed to HfRunner"},
	{Key: "max_perplexity_ratio", Field: "MaxPerplexityRatio", Flag: "max-perplexity-ratio", Commands: pythonCommands, Kind: Ratio, Range: Range{"0.0001", "1000"}, Default: "0.1", Verdict: true,
		Doc: "gate 2 fails when the calibration passage's perplexity exceeds this × vocab_size"},
	{Key: "timeout", Field: "Timeout", Flag: "timeout", Commands: pythonCommands, Kind: Duration, Range: Range{"1s", "168h"}, Default: "30m", Verdict: true,
		Doc: "kill the Python worker after this long, e.g. 90s or 30m"},
	{Key: "scan", Field: "Scan", Flag: "scan", Commands: modelCommands, Kind: Bool, Default: "false", Verdict: true,
		Doc: "read every tensor and count NaN/Inf (touches all bytes)"},
	{Key: "workers", Field: "Workers", Flag: "workers", Commands: modelCommands, Kind: Count, Range: Range{"0", "1024"}, Default: "0",
		Doc: "scan workers (0: one per CPU)"},
	{Key: "report_dir", Field: "ReportDir", Flag: "report-dir", Commands: []string{"run"}, Kind: Path, Verdict: true,
		Doc: "where report.json and report.md go (empty: <workspace>/docs/development_progress/phase0)"},
	{Key: "force", Field: "Force", Flag: "force", Commands: pythonCommands, Kind: Bool, Default: "false", Verdict: true,
		Doc: "proceed despite a low-memory preflight warning (files phase0 did not write are never overwritten)"},
	{Key: "fresh", Field: "Fresh", Flag: "fresh", Commands: []string{"run"}, Kind: Bool, Default: "false",
		Doc: "run everything even when the recorded PASS's inputs are unchanged (the escape from reuse)"},
	{Key: "refresh", Field: "Refresh", Flag: "refresh", Commands: workspaceCmds, Kind: Bool, Default: "false",
		Doc: "record the reference anew even when its key matches"},
	{Key: "memory_check", Field: "MemoryCheck", Kind: Bool, Default: "true", Verdict: true,
		Doc: "refuse a model whose bf16 run needs more memory than the machine has (force: warn)"},
	{Key: "cpu_helpers.attention_fallback", Field: "AttentionFallback", Kind: Bool, Default: "true", Verdict: true,
		Doc: "keep attention_reference + softmax in <name>_cpu_helpers.py for prefill's cpu_attn=True fallback"},
	{Key: "license_header", Field: "LicenseHeader", Flag: "license-header", Commands: []string{"run"}, Kind: Lines, Verdict: true,
		Doc: "comment lines opening every generated Python file, e.g. an SPDX-License-Identifier line (newline-separated)"},
	{Key: "cache", Field: "CacheDir", Kind: Path, Verdict: true,
		Doc: "phase0's own cache (empty: $XDG_CACHE_HOME/phase0, else ~/.cache/phase0)"},
	{Key: "pyshim", Field: "PyShimDir", Kind: Path, Verdict: true,
		Doc: "a working copy of the phase0_shim package instead of the one built into the binary"},
}

// Lookup finds a setting by its YAML key.
func Lookup(key string) (Setting, bool) {
	for _, s := range Table {
		if s.Key == key {
			return s, true
		}
	}
	return Setting{}, false
}

// IsSection says whether key only groups settings (cpu_helpers).
func IsSection(key string) bool {
	for _, s := range Table {
		if strings.HasPrefix(s.Key, key+".") {
			return true
		}
	}
	return false
}

// goType is the Go type of a Kind's value in orchestrator.Settings.
func (k Kind) goType() reflect.Type {
	switch k {
	case Bool:
		return reflect.TypeFor[bool]()
	case Count:
		return reflect.TypeFor[int]()
	case Duration:
		return reflect.TypeFor[int64]() // time.Duration; field compares reflect.Kinds
	case Ratio:
		return reflect.TypeFor[float64]()
	case Lines:
		return reflect.TypeFor[[]string]()
	}
	return reflect.TypeFor[string]()
}

// field finds the setting's field in *settings, a pointer to a struct.
func (s Setting) field(settings any) (reflect.Value, error) {
	v := reflect.ValueOf(settings)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, fmt.Errorf("setting %s: want a pointer to the settings struct, got %T", s.Key, settings)
	}
	f := v.Elem().FieldByName(s.Field)
	if !f.IsValid() {
		return reflect.Value{}, fmt.Errorf("setting %s: %s has no field %s", s.Key, v.Elem().Type(), s.Field)
	}
	want := s.Kind.goType()
	if f.Type().Kind() != want.Kind() || f.Type().Kind() == reflect.Slice && f.Type().Elem().Kind() != reflect.String {
		return reflect.Value{}, fmt.Errorf("setting %s: field %s.%s is %s, want %s", s.Key, v.Elem().Type(), s.Field, f.Type(), want)
	}
	return f, nil
}

// Get reads the setting's field from *settings (orchestrator.Settings).
func (s Setting) Get(settings any) (any, error) {
	f, err := s.field(settings)
	if err != nil {
		return nil, err
	}
	return f.Interface(), nil
}

// Set stores value, of the Kind's Go type (time.Duration for Duration), in
// the setting's field of *settings.
func (s Setting) Set(settings any, value any) error {
	f, err := s.field(settings)
	if err != nil {
		return err
	}
	v := reflect.ValueOf(value)
	if !v.IsValid() {
		f.SetZero()
		return nil
	}
	if !v.Type().ConvertibleTo(f.Type()) || v.Kind() != f.Kind() {
		return fmt.Errorf("setting %s: a %T cannot be stored in field %s (%s)", s.Key, value, s.Field, f.Type())
	}
	f.Set(v.Convert(f.Type()))
	return nil
}
