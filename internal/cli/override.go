package cli

import (
	"fmt"
	"slices"

	"github.com/spf13/viper"

	"phase0/configs"
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
		if _, ok := configs.Lookup(k); !ok {
			return fmt.Errorf("unknown option %q (known: %v)", k, leafKeys())
		}
		v.Set(k, overrides[k])
	}
	return nil
}

// leafKeys lists the settings an override may set, sorted.
func leafKeys() []string {
	out := make([]string, 0, len(configs.Table))
	for _, row := range configs.Table {
		out = append(out, row.Key)
	}
	slices.Sort(out)
	return out
}
