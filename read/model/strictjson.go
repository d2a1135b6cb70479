package model

import (
	"errors"
	"fmt"

	"phase0/internal/strictjson"
)

// checkStrict refuses what encoding/json would silently accept in a
// config.json (internal/strictjson): bytes that are not UTF-8 and a key
// repeated inside any object, at any depth. The error names the byte offset
// or the dotted path of the key.
func checkStrict(data []byte) error {
	err := strictjson.Check(data)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, strictjson.ErrNotUTF8):
		return fmt.Errorf("%w: config.json is %w", ErrConfig, err)
	}
	return fmt.Errorf("%w: config.json: %w", ErrConfig, err)
}
