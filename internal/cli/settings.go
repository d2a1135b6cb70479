package cli

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/spf13/cast"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"golang.org/x/term"

	"phase0/configs"
	"phase0/internal/boundedfile"
	"phase0/internal/pyenv"
	"phase0/orchestrator"
	"phase0/scaffold"
)

// addSettingFlags adds the flag of every setting command takes (configs.Table).
// Only a bool is a typed flag: the others are strings so that the parser
// reads every layer alike, strictly, and "" means "not given".
func addSettingFlags(flags *pflag.FlagSet, command string) {
	for _, row := range configs.Table {
		switch {
		case !row.On(command) || command != configs.Root && row.On(configs.Root):
			continue // a root flag is persistent: added once, on the root
		case row.Kind == configs.Bool:
			flags.Bool(row.Flag, false, row.Usage())
		default:
			flags.String(row.Flag, "", row.Usage())
		}
	}
}

func (inv *invocation) settings(cmd *cobra.Command) (*orchestrator.Settings, error) {
	return settings(inv.v, cmd, inv.stderr, inv.overrides)
}

// maxConfigFile bounds a --config file: real ones are a few hundred bytes.
const maxConfigFile = 1 << 20

// settings layers the configuration: flags > PHASE0_* env > --config file > defaults.
// Every value is parsed strictly: garbage is an error naming the key and
// where it came from, never a silent zero.
func settings(v *viper.Viper, cmd *cobra.Command, stderr io.Writer, overrides map[string]any) (*orchestrator.Settings, error) {
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(configs.DefaultYAML)); err != nil {
		return nil, fmt.Errorf("built-in configs/default.yaml: %w", err)
	}
	var fileKeys map[string]bool // the keys the --config file sets, for messages
	path, _ := cmd.Flags().GetString("config")
	if path != "" {
		data, err := boundedfile.Read(path, maxConfigFile)
		if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		if err := v.MergeConfig(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("--config %s: not valid YAML: %w", path, err)
		}
		if err := checkKeys(v); err != nil {
			return nil, fmt.Errorf("--config %s: %w", path, err)
		}
		fileKeys = yamlKeys(data)
	}
	for _, row := range configs.Table {
		if err := v.BindEnv(row.Key, row.Env()); err != nil {
			return nil, fmt.Errorf("setting %s: %w", row.Key, err)
		}
		if f := cmd.Flags().Lookup(row.Flag); row.Flag != "" && f != nil {
			if err := v.BindPFlag(row.Key, f); err != nil {
				return nil, fmt.Errorf("setting %s: %w", row.Key, err)
			}
		}
	}
	if err := override(v, overrides); err != nil {
		return nil, err
	}
	p := parser{v: v, cmd: cmd, configPath: path, fileKeys: fileKeys, overrides: overrides}
	s := &orchestrator.Settings{Env: os.Getenv, Progress: stderr}
	for _, row := range configs.Table {
		if err := row.Set(s, p.value(row)); err != nil && p.err == nil {
			p.err = err
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	s.Python = defaultPython(s.Python)
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		s.ProgressBars = true
	}
	if err := referenceFlags(cmd, s); err != nil {
		return nil, err
	}
	switch s.PromptStyle {
	case "", "base", "instruct":
	default:
		return nil, fmt.Errorf("prompt_style must be base or instruct, got %q (%s)", s.PromptStyle, p.origin("prompt_style"))
	}
	if s.Decode > s.MaxSeq {
		return nil, fmt.Errorf("decode %d does not fit max_seq %d: the prompt and the continuation share the runner's sequence", s.Decode, s.MaxSeq)
	}
	return s, nil
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

// parser reads settings strictly and keeps the first error.
type parser struct {
	v          *viper.Viper
	cmd        *cobra.Command
	configPath string
	fileKeys   map[string]bool
	overrides  map[string]any
	err        error
}

// value is the setting's value, of its Kind's Go type.
func (p *parser) value(row configs.Setting) any {
	switch row.Kind {
	case configs.Bool:
		return p.boolean(row.Key)
	case configs.Count:
		return p.count(row)
	case configs.Duration:
		return p.duration(row)
	case configs.Ratio:
		return p.ratio(row)
	case configs.Lines:
		return p.licenseLines(row.Key)
	}
	return p.str(row.Key)
}

// yamlKeys lists the keys a --config file sets (it already parsed once).
func yamlKeys(data []byte) map[string]bool {
	f := viper.New()
	f.SetConfigType("yaml")
	keys := map[string]bool{}
	if f.ReadConfig(bytes.NewReader(data)) == nil {
		for _, k := range f.AllKeys() {
			keys[k] = true
		}
	}
	return keys
}

// origin names where a key's value came from, for messages.
func (p *parser) origin(key string) string {
	if _, ok := p.overrides[key]; ok {
		return "option " + key
	}
	if row, ok := configs.Lookup(key); ok && row.Flag != "" {
		if f := p.cmd.Flags().Lookup(row.Flag); f != nil && f.Changed {
			return "--" + row.Flag
		}
	}
	env := configs.EnvName(key)
	if _, ok := os.LookupEnv(env); ok {
		return env
	}
	if p.fileKeys[key] {
		return "--config " + p.configPath + ": " + key
	}
	return "setting " + key
}

func (p *parser) fail(key string, value any, want string) {
	if p.err == nil {
		p.err = fmt.Errorf("%s: %q is not %s", p.origin(key), fmt.Sprint(value), want)
	}
}

func (p *parser) str(key string) string { return p.v.GetString(key) }

// licenseLines reads the license header text as the comment lines the
// generated files open with (scaffold.LicenseLines).
func (p *parser) licenseLines(key string) []string {
	lines, err := scaffold.LicenseLines(p.str(key))
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("%s: %w", p.origin(key), err)
	}
	return lines
}

func (p *parser) boolean(key string) bool {
	raw := p.v.Get(key)
	if s, ok := raw.(string); ok && s == "" {
		return false
	}
	b, err := cast.ToBoolE(raw)
	if err != nil {
		p.fail(key, raw, "true or false")
	}
	return b
}

// count reads a non-negative integer no smaller than row.Min; "" (a flag
// given empty) means the built-in default.
func (p *parser) count(row configs.Setting) int {
	key, least := row.Key, row.Min
	raw := p.v.Get(key)
	if s, ok := raw.(string); ok && s == "" {
		raw = row.Default
	}
	switch x := raw.(type) {
	case float64:
		if x != math.Trunc(x) || x < float64(least) || x > 1<<31 {
			p.fail(key, raw, fmt.Sprintf("an integer in [%d, 2^31]", least))
			return 0
		}
		return int(x)
	case uint64:
		if x > 1<<31 {
			p.fail(key, raw, fmt.Sprintf("an integer in [%d, 2^31]", least))
			return 0
		}
	}
	n, err := cast.ToInt64E(raw)
	if err != nil || n < int64(least) || n > 1<<31 {
		p.fail(key, raw, fmt.Sprintf("an integer in [%d, 2^31]", least))
		return 0
	}
	return int(n)
}

// ratio reads a positive, finite fraction; "" means the built-in default.
func (p *parser) ratio(row configs.Setting) float64 {
	key := row.Key
	raw := p.v.Get(key)
	if s, ok := raw.(string); ok && s == "" {
		raw = row.Default
	}
	x, err := cast.ToFloat64E(raw)
	if _, isBool := raw.(bool); isBool || err != nil || x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		p.fail(key, raw, "a positive number such as 0.1")
		return 0
	}
	return x
}

// duration reads a positive duration; "" means the built-in default.
func (p *parser) duration(row configs.Setting) time.Duration {
	key := row.Key
	raw := p.v.Get(key)
	if s, ok := raw.(string); ok && s == "" {
		raw = row.Default
	}
	d, err := cast.ToDurationE(raw)
	if s, ok := raw.(string); ok {
		d, err = time.ParseDuration(s)
	}
	if err != nil || d <= 0 {
		p.fail(key, raw, "a positive duration such as 90s or 30m")
		return 0
	}
	return d
}

// known says whether a --config file or an option may name key: a setting,
// or a section grouping settings (cpu_helpers).
func known(key string) bool {
	_, ok := configs.Lookup(key)
	return ok || configs.IsSection(key)
}

// checkKeys refuses misspelt settings instead of silently ignoring them.
func checkKeys(v *viper.Viper) error {
	for _, k := range v.AllKeys() {
		if !known(k) {
			return fmt.Errorf("unknown setting %q", k)
		}
	}
	return nil
}
