package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jsonWalker reads JSON token by token, so that repeated keys, which a map
// unmarshal would silently merge, can be refused. Its errors are
// FormatErrors at the decoder's position.
type jsonWalker struct {
	dec  *json.Decoder
	file string
	base int64  // bytes in the file before the JSON starts
	what string // "header" or "index", for messages
}

// errf builds a FormatError at the decoder's current position.
func (p *jsonWalker) errf(sentinel error, format string, args ...any) error {
	return &FormatError{File: p.file, Offset: p.base + p.dec.InputOffset(), Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

// token reads the next JSON token, turning syntax errors into FormatErrors.
func (p *jsonWalker) token() (json.Token, error) {
	tok, err := p.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.errf(nil, "%s JSON ends early", p.what)
		}
		return nil, p.errf(nil, "%s JSON: %v", p.what, err)
	}
	return tok, nil
}

// delim reads a token that must be the delimiter want.
func (p *jsonWalker) delim(want json.Delim, what string) error {
	tok, err := p.token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return p.errf(nil, "%s: got %s, want %q", what, describe(tok), string(want))
	}
	return nil
}

// key reads an object key.
func (p *jsonWalker) key() (string, error) {
	tok, err := p.token()
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", p.errf(nil, "object key: got %s, want a string", describe(tok))
	}
	return k, nil
}
