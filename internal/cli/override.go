package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/viper"
)

// override sets each key above flags, env and files. A key must be a leaf
// setting: "cpu_helpers" alone would replace the whole section.
func override(v *viper.Viper, overrides map[string]any) error {
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !knownKeys[k] || isSection(k) {
			return fmt.Errorf("unknown option %q (known: %v)", k, leafKeys())
		}
		v.Set(k, overrides[k])
	}
	return nil
}

// isSection reports a key that only groups others (cpu_helpers).
func isSection(key string) bool {
	for k := range knownKeys {
		if len(k) > len(key) && k[:len(key)+1] == key+"." {
			return true
		}
	}
	return false
}

// leafKeys lists the settings an override may set, sorted.
func leafKeys() []string {
	var out []string
	for k := range knownKeys {
		if !isSection(k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
