package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"phase0/wire"
)

// ErrContract marks a result whose keys do not match the Go type declared
// for it: the Python op and this package disagree about the boundary.
var ErrContract = errors.New("op result does not match its Go type")

// decodeStrict decodes data into out (a pointer) after checking, at every
// depth, that each JSON object has exactly the keys of the Go struct it
// fills: an unknown key or a missing required one is an ErrContract naming
// the op and the key's path.
func decodeStrict(op string, data []byte, out any) error {
	t := reflect.TypeOf(out)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("ops: decoding %s: want a pointer to decode into, got %T", op, out)
	}
	if err := check(data, t.Elem(), ""); err != nil {
		return fmt.Errorf("%w: %s %w", ErrContract, op, err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrContract, op, err)
	}
	return nil
}

var (
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
)

// nullable says whether JSON null is a value of t.
func nullable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	}
	return false
}

func check(data json.RawMessage, t reflect.Type, path string) error {
	if t == rawMessageType || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // opaque on purpose: decoded later, or by its own rules
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		if nullable(t) {
			return nil
		}
		return fmt.Errorf("result %s is null, want a %s", describe(path), t)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return check(data, t.Elem(), path)
	case reflect.Struct:
		return checkObject(data, t, path)
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return fmt.Errorf("result %s is not a JSON array (want %s): %w", describe(path), t, err)
		}
		for i, item := range items {
			if err := check(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		var items map[string]json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return fmt.Errorf("result %s is not a JSON object (want %s): %w", describe(path), t, err)
		}
		for _, k := range sortedKeys(items) {
			if err := check(items[k], t.Elem(), join(path, k)); err != nil {
				return err
			}
		}
	}
	return nil // scalars: json.Unmarshal reports a wrong type
}

func checkObject(data json.RawMessage, t reflect.Type, path string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return fmt.Errorf("result %s is not a JSON object (want %s): %w", describe(path), t, err)
	}
	fields := wire.Fields(t)
	for _, k := range sortedKeys(obj) {
		f, ok := fields[k]
		if !ok {
			return fmt.Errorf("result has the unknown field %q (%s declares %s)", join(path, k), t, strings.Join(sortedKeys(fields), ", "))
		}
		if err := check(obj[k], f.Type, join(path, k)); err != nil {
			return err
		}
	}
	for _, name := range sortedKeys(fields) {
		if _, ok := obj[name]; !ok && !fields[name].Optional {
			return fmt.Errorf("result lacks the required field %q of %s", join(path, name), t)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func describe(path string) string {
	if path == "" {
		return "(the whole result)"
	}
	return fmt.Sprintf("field %q", path)
}
