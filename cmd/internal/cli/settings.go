package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"phase0/internal/boundedfile"
	"phase0/internal/pyenv"
	"phase0/output/scaffold"
	"phase0/python/pyshim"
	"phase0/run/orchestrator"
	"phase0/run/settings"
)

// flagValue is the value of every flag phase0 defines: a flag is given at
// most once per invocation. A second value, whatever the flag, is refused
// rather than one of the two silently winning (the one a person meant is
// unknown, and the other's errors would pass unread): --config, --junit,
// --shard, --json and every setting's flag follow the one rule, as a
// setting repeated in a --config file or a Python mapping does.
type flagValue struct {
	typ   string // the argument's name in --help: int, float, duration, bool, string
	text  string
	given bool
	// check refuses a value before it is stored (--config "", --json=maybe).
	check func(string) error
}

func (f *flagValue) String() string { return f.text }
func (f *flagValue) Type() string   { return f.typ }
func (f *flagValue) Set(s string) error {
	if f.given {
		return fmt.Errorf("given twice (%s, then %s): give it once", settings.Quote(f.text), settings.Quote(s))
	}
	if f.check != nil {
		if err := f.check(s); err != nil {
			return err
		}
	}
	f.text, f.given = s, true
	return nil
}

// settingFlag is a setting's flag: typed in --help by the row's kind (int,
// float, duration, bool, string), but it keeps the text as given, so that
// the one parser (settings.Parse) reads a flag exactly as it reads a
// variable, a file's key or a Python option (pflag's own int would take
// 0x41 and 1_0).
func settingFlag(kind settings.Kind) *flagValue { return &flagValue{typ: kind.FlagType()} }

// stringFlag is a flag of one invocation that is not a setting (--junit,
// --shard, --out, --dtype): text, given at most once.
func stringFlag(flags *pflag.FlagSet, name, def, usage string) {
	flags.Var(&flagValue{typ: "string", text: def}, name, usage)
}

// boolFlag is a flag that is true or false (--json): alone it means true;
// --json=maybe is refused in those words, not strconv's.
func boolFlag(flags *pflag.FlagSet, name, usage string) {
	f := flags.VarPF(&flagValue{typ: "bool", text: "false", check: func(s string) error {
		if s != "true" && s != "false" {
			return fmt.Errorf("--%s takes true or false, not %s", name, settings.Quote(s))
		}
		return nil
	}}, name, "", usage)
	f.NoOptDefVal = "true"
}

// flagError is a flag's parse error without pflag's wrapping, which repeats
// the whole value (a 10 MB argument, twice) before the reason: the reason
// names the flag and quotes the value, cut.
func flagError(cmd *cobra.Command, err error) error {
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
		return unknownFlag(cmd, name, err)
	}
	var bad *pflag.InvalidValueError
	if errors.As(err, &bad) {
		name := "--" + bad.GetFlag().Name
		cause := bad.Unwrap().Error()
		if strings.HasPrefix(cause, name) {
			return errors.New(cause)
		}
		return fmt.Errorf("%s: %s", name, cause)
	}
	return err
}

// unknownFlag is err (pflag's "unknown flag: --name") with a hint: the
// flag of this command it most likely misspells (settings.Nearest, the
// suggester of the PHASE0_* variables too), else the commands that take
// it, else where the flags are listed.
func unknownFlag(cmd *cobra.Command, name string, err error) error {
	name, _, _ = strings.Cut(name, "=")
	var own []string
	visit := func(f *pflag.Flag) {
		if !f.Hidden && !slices.Contains(own, f.Name) {
			own = append(own, f.Name)
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	if near := settings.Nearest(name, own); near != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, near)
	}
	var others []string
	for _, c := range cmd.Root().Commands() {
		if c != cmd && c.Flags().Lookup(name) != nil {
			others = append(others, c.Name())
		}
	}
	if len(others) > 0 {
		verb := " takes it"
		if len(others) > 1 {
			verb = " take it"
		}
		return fmt.Errorf("%w: %s does not take it (%s%s)", err, cmd.Name(), strings.Join(others, " and "), verb)
	}
	return fmt.Errorf("%w (phase0 %s --help lists its flags)", err, cmd.Name())
}

// addSettingFlags adds the flag of every setting command takes (settings.Table).
func addSettingFlags(flags *pflag.FlagSet, command string) {
	for _, row := range settings.Table {
		if !row.On(command) || command != settings.Root && row.On(settings.Root) {
			continue // a root flag is persistent: added once, on the root
		}
		f := flags.VarPF(settingFlag(row.Kind), row.Flag, "", row.Usage())
		if row.Kind == settings.Bool {
			f.NoOptDefVal = "true" // --scan alone; --scan=false
		}
	}
}

// addConfigFlag adds --config to a command that reads settings from a file.
func addConfigFlag(flags *pflag.FlagSet) {
	flags.Var(&flagValue{typ: "string", check: func(s string) error {
		if s == "" {
			return errors.New("an empty path: name a YAML file, or leave --config out")
		}
		return nil
	}}, "config", "YAML settings file (overrides run/settings/default.yaml; flags and PHASE0_* env override it)")
}

func (inv *invocation) settings(cmd *cobra.Command) (*orchestrator.Settings, error) {
	s, origins, err := layerSettings(cmd, inv.stderr, inv.overrides)
	inv.origins = origins
	if s != nil {
		s.Sessions = inv.sessions
	}
	return s, err
}

// maxConfigFile bounds a --config file: real ones are a few hundred bytes.
const maxConfigFile = 1 << 20

// origins says where each setting's value came from, for messages: "--workers",
// "PHASE0_WORKERS", "my.yaml:3: workers", "option workers" or the defaults.
type origins map[string]string

func (o origins) of(key string) string {
	if where, ok := o[key]; ok {
		return where
	}
	return "setting " + key
}

// given is one source's value of a setting.
type given struct {
	value  settings.Value
	origin string
}

// layerSettings layers the configuration, highest first: the Python API's
// options, flags, PHASE0_* variables, the --config file, run/settings/default.yaml.
// Every value any layer gives is parsed by settings' one parser, even one a
// higher layer overrides, and for every setting, even one the command does
// not read (a file or the environment may be shared by every command): a bad
// value is an error naming where it came from, the value and what the
// setting takes, before anything is read or written. A flag the command does
// not read is not offered on it; a Python option it does not read is refused.
func layerSettings(cmd *cobra.Command, stderr io.Writer, overrides map[string]any) (*orchestrator.Settings, origins, error) {
	layers, err := gather(cmd, overrides)
	if err != nil {
		return nil, nil, err
	}
	s := &orchestrator.Settings{Env: os.Getenv, Progress: stderr}
	from := origins{}
	var errs []error
	for _, row := range settings.Table {
		var top any
		for i, g := range layers[row.Key] {
			v, err := row.Parse(g.value)
			if err == nil && row.Kind == settings.Lines {
				v, err = scaffold.LicenseLines(v.(string))
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", g.origin, err))
				continue
			}
			if i == 0 {
				top, from[row.Key] = v, g.origin
			}
		}
		if top != nil {
			if err := row.Set(s, top); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return nil, from, errs[0] // one message: the first row's, its highest layer's
	}
	s.Python = defaultPython(s.Python)
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		s.ProgressBars = true
	}
	if s.Decode > s.MaxSeq {
		return nil, from, fmt.Errorf("%s: decode %d does not fit max_seq %d (%s): the prompt and the continuation share the runner's sequence",
			from.of("decode"), s.Decode, s.MaxSeq, from.of("max_seq"))
	}
	if s.PyShimDir != "" {
		if err := pyshim.CheckWorkingCopy(s.PyShimDir); err != nil {
			return nil, from, fmt.Errorf("%s: %w", from.of("pyshim"), err)
		}
	}
	if s.Name != "" {
		// a bad name is known now, not after the model is read
		if err := scaffold.CheckName(s.Name); err != nil {
			return nil, from, fmt.Errorf("%s: %w", from.of("name"), err)
		}
	}
	if err := referenceFlags(cmd, s, from); err != nil {
		return nil, from, err
	}
	return s, from, nil
}

// gather is every layer's value of every setting, highest layer first.
func gather(cmd *cobra.Command, overrides map[string]any) (map[string][]given, error) {
	if err := settings.UnknownEnv(os.Environ()); err != nil {
		return nil, err
	}
	layers := map[string][]given{}
	command := cmd.Name()
	opts, err := options(command, overrides)
	if err != nil {
		return nil, err
	}
	for key, v := range opts {
		layers[key] = append(layers[key], given{v, "option " + key})
	}
	for _, row := range settings.Table {
		if f := cmd.Flags().Lookup(row.Flag); row.Flag != "" && f != nil && f.Changed {
			layers[row.Key] = append(layers[row.Key], given{settings.TextValue(f.Value.String()), "--" + row.Flag})
		}
		if text, ok := os.LookupEnv(row.Env()); ok {
			layers[row.Key] = append(layers[row.Key], given{settings.TextValue(text), row.Env()})
		}
	}
	var file map[string]settings.Located
	if f := cmd.Flags().Lookup("config"); f != nil && f.Value.String() != "" {
		path := f.Value.String()
		data, err := boundedfile.Read(path, maxConfigFile)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		if file, err = settings.ReadYAML(path, data); err != nil {
			return nil, err
		}
	}
	defaults, err := settings.ReadYAML("run/settings/default.yaml", settings.DefaultYAML)
	if err != nil {
		return nil, err
	}
	for _, row := range settings.Table {
		if v, ok := file[row.Key]; ok {
			layers[row.Key] = append(layers[row.Key], given{v.Value, v.Origin})
		}
		if v, ok := defaults[row.Key]; ok {
			layers[row.Key] = append(layers[row.Key], given{v.Value, v.Origin})
		}
	}
	return layers, nil
}

// options reads the Python API's keyword options (decoded from JSON, numbers
// as json.Number) as values by key. A key must be a setting the command
// reads: a flag's setting on the commands offering the flag, any other
// setting everywhere.
func options(command string, overrides map[string]any) (map[string]settings.Value, error) {
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := map[string]settings.Value{}
	for _, k := range keys {
		row, ok := settings.Lookup(k)
		switch {
		case ok && row.Flag != "" && command != "" && !row.On(command):
			return nil, fmt.Errorf("option %s: %s does not read this setting (%s do)", k, command, strings.Join(row.Commands, ", "))
		case ok:
			v, err := optionValue(overrides[k])
			if err != nil {
				return nil, fmt.Errorf("option %s: %w", k, err)
			}
			out[k] = v
		case settings.IsSection(k):
			return nil, fmt.Errorf("option %s: a section of settings; give a mapping of its keys, such as %s={%q: False}", k, k, sectionExample(k))
		default:
			if parent, _, found := strings.Cut(k, "."); found {
				if _, leaf := settings.Lookup(parent); leaf {
					return nil, fmt.Errorf("option %s: a mapping is not %s", parent, mustLookup(parent).Want())
				}
			}
			return nil, fmt.Errorf("unknown option %q (the settings: %v)", k, settings.Keys())
		}
	}
	return out, nil
}

func mustLookup(key string) settings.Setting { row, _ := settings.Lookup(key); return row }

func sectionExample(section string) string {
	for _, row := range settings.Table {
		if rest, ok := strings.CutPrefix(row.Key, section+"."); ok {
			return rest
		}
	}
	return "key"
}

// optionValue is a Python option as settings' parser takes it: JSON's
// string, number (json.Number keeps its text: 10**400 stays a number to
// refuse, not a decoding error), bool, null, list or object; Go callers
// (tests) may pass Go numbers.
func optionValue(v any) (settings.Value, error) {
	switch x := v.(type) {
	case nil:
		return settings.Value{Form: settings.FormNull}, nil
	case string:
		return settings.TextValue(x), nil
	case bool:
		return settings.Value{Text: fmt.Sprint(x), Form: settings.FormBool}, nil
	case interface{ String() string }: // json.Number
		return settings.Value{Text: x.String(), Form: settings.FormNumber}, nil
	case int, int64, float64:
		return settings.Value{Text: fmt.Sprint(x), Form: settings.FormNumber}, nil
	case []any:
		return settings.Value{Form: settings.FormList}, nil
	case map[string]any:
		return settings.Value{Form: settings.FormMap}, nil
	}
	return settings.Value{}, fmt.Errorf("%w: a %T is not a setting's value", settings.ErrValue, v)
}

// defaultPython is the python setting, else the venv make built this binary
// for (internal/pyenv); "" when neither exists, which the commands that need
// Python report as could-not-evaluate.
func defaultPython(setting string) string {
	if setting != "" {
		return setting
	}
	py, err := pyenv.DefaultPython()
	if err != nil {
		return ""
	}
	return py
}
