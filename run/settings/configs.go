// Package configs carries the documented default settings into the binary.
package settings

import _ "embed"

// DefaultYAML is configs/default.yaml, the lowest-precedence settings layer.
//
//go:embed default.yaml
var DefaultYAML []byte
