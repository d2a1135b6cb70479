package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"go.yaml.in/yaml/v3"
)

// ErrFile marks a settings file phase0 does not read: not YAML, more than
// one document, not a mapping of known keys, a key twice.
var ErrFile = errors.New("invalid settings file")

// fileError is a message about a settings file, in which errors.Is finds
// ErrFile (and what the message wraps) without the message saying it.
type fileError struct{ err error }

func (e *fileError) Error() string   { return e.err.Error() }
func (e *fileError) Unwrap() []error { return []error{ErrFile, e.err} }

func fileErr(format string, args ...any) error {
	return &fileError{fmt.Errorf(format, args...)}
}

// Located is a value from a settings file and where it was written.
type Located struct {
	Value
	// Origin names the file, line and key: "settings.yaml:3: workers".
	Origin string
}

// ReadYAML reads a settings file (name is how messages call it) into the
// values it sets by key. It checks the file's shape only: exactly one
// document, a mapping whose keys are settings (or sections such as
// cpu_helpers, holding a mapping), each once. The values are parsed later,
// with every other source's, by Setting.Parse.
func ReadYAML(name string, data []byte) (map[string]Located, error) {
	out := map[string]Located{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err == io.EOF {
		return out, nil // empty, or comments only
	} else if err != nil {
		return nil, fileErr("%s: not valid YAML: %w", name, err)
	}
	var second yaml.Node
	if err := dec.Decode(&second); err != io.EOF {
		line := second.Line
		if err != nil {
			return nil, fileErr("%s: not valid YAML after the first document: %w", name, err)
		}
		return nil, fileErr("%s:%d: a second YAML document (after ---); phase0 reads exactly one", name, line)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return out, nil
	}
	if err := readMapping(name, "", doc.Content[0], out); err != nil {
		return nil, err
	}
	return out, nil
}

// readMapping reads the keys under prefix ("" or "cpu_helpers.") from node.
func readMapping(name, prefix string, node *yaml.Node, out map[string]Located) error {
	node = deref(node)
	where := "the top level"
	if prefix != "" {
		where = "section " + prefix[:len(prefix)-1]
	}
	switch {
	case node.Kind == yaml.ScalarNode && node.ShortTag() == "!!null":
		return nil // an empty file or section
	case node.Kind != yaml.MappingNode:
		return fileErr("%s:%d: %s is %s; want its settings as key: value lines", name, node.Line, where, describe(node))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := deref(node.Content[i]), deref(node.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return fileErr("%s:%d: in %s, a key is %s; keys are setting names", name, k.Line, where, describe(k))
		}
		key := prefix + k.Value
		if seen[key] {
			return fileErr("%s:%d: %s appears twice", name, k.Line, key)
		}
		seen[key] = true
		if _, ok := Lookup(key); ok {
			if before, twice := out[key]; twice {
				// cpu_helpers.attention_fallback and a cpu_helpers: map
				// holding it: the same setting in two spellings.
				return fileErr("%s:%d: %s appears twice (first at %s): give each setting once", name, k.Line, key, before.Origin)
			}
			val, err := scalar(v)
			if err != nil {
				return fileErr("%s:%d: %s: %w", name, v.Line, key, err)
			}
			out[key] = Located{Value: val, Origin: fmt.Sprintf("%s:%d: %s", name, v.Line, key)}
			continue
		}
		if IsSection(key) {
			if err := readMapping(name, key+".", v, out); err != nil {
				return err
			}
			continue
		}
		return fileErr("%s:%d: unknown setting %q (the settings: %v)", name, k.Line, key, Keys())
	}
	return nil
}

// scalar is a leaf's value as written: its text and its YAML form. A list
// or map is returned as such, for Setting.Parse to refuse with the rest.
func scalar(n *yaml.Node) (Value, error) {
	switch n.Kind {
	case yaml.SequenceNode:
		return Value{Form: FormList}, nil
	case yaml.MappingNode:
		return Value{Form: FormMap}, nil
	}
	switch n.ShortTag() {
	case "!!str":
		return Value{Text: n.Value, Form: FormText, Tagged: n.Style&yaml.TaggedStyle != 0}, nil
	case "!!int":
		return Value{Text: n.Value, Form: FormNumber}, nil
	case "!!float":
		// `!!float 7` is the float 7.0, never the integer 7; a plain
		// integer too large for int64, which YAML resolves as a float, is
		// read as written.
		if n.Style&yaml.TaggedStyle != 0 && integerText.MatchString(n.Value) {
			return Value{Text: n.Value + ".0", Form: FormNumber}, nil
		}
		return Value{Text: n.Value, Form: FormNumber}, nil
	case "!!bool":
		return Value{Text: n.Value, Form: FormBool}, nil
	case "!!null":
		return Value{Form: FormNull}, nil
	}
	return Value{}, fmt.Errorf("a %s value %s: quote it, or write a plain string, number or true/false", n.ShortTag(), Quote(n.Value))
}

// deref follows an alias (*name) to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.ShortTag() {
	case "!!str":
		return "the string " + Quote(n.Value)
	case "!!int", "!!float":
		return "the number " + n.Value
	case "!!bool":
		return "the bool " + n.Value
	case "!!null":
		return "null"
	}
	return "the " + n.ShortTag() + " " + Quote(n.Value)
}

// Keys are every setting's key, sorted.
func Keys() []string {
	out := make([]string, 0, len(Table))
	for _, row := range Table {
		out = append(out, row.Key)
	}
	slices.Sort(out)
	return out
}
