// Package settings declares every phase0 setting once (settings.go: its key,
// kind, range, flag, variable and commands), parses every value by one strict
// parser from every source, and carries the documented defaults
// (default.yaml) into the binary.
package settings

import _ "embed"

// DefaultYAML is run/settings/default.yaml, the lowest-precedence settings layer.
//
//go:embed default.yaml
var DefaultYAML []byte
