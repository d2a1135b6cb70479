package ops

import (
	"errors"
	"strings"
	"testing"
)

type inner struct {
	ID   int     `json:"id"`
	Note string  `json:"note,omitempty"`
	Opt  *string `json:"opt"`
}

type outer struct {
	Name  string           `json:"name"`
	Items []inner          `json:"items"`
	ByKey map[string]inner `json:"by_key"`
	Child *inner           `json:"child"`
}

func TestDecodeStrict(t *testing.T) {
	cases := []struct {
		name, json, want string // want: "" for success, else a substring of the error
	}{
		{"complete", `{"name":"a","items":[{"id":1,"opt":null}],"by_key":{},"child":null}`, ""},
		{"optional key given", `{"name":"a","items":[{"id":1,"note":"n","opt":"x"}],"by_key":null,"child":{"id":2,"opt":null}}`, ""},
		{"unknown top-level key", `{"name":"a","nam":"b","items":[],"by_key":{},"child":null}`, `unknown field "nam"`},
		{"missing top-level key", `{"items":[],"by_key":{},"child":null}`, `lacks the required field "name"`},
		{"renamed key in a list", `{"name":"a","items":[{"id":1,"opt":null},{"ident":2,"opt":null}],"by_key":{},"child":null}`, `unknown field "items[1].ident"`},
		{"missing key in a map value", `{"name":"a","items":[],"by_key":{"k":{"id":1}},"child":null}`, `lacks the required field "by_key.k.opt"`},
		{"missing key in a pointer", `{"name":"a","items":[],"by_key":{},"child":{"opt":null}}`, `lacks the required field "child.id"`},
		{"null for a scalar", `{"name":null,"items":[],"by_key":{},"child":null}`, `field "name" is null, want a string`},
		{"wrong type", `{"name":1,"items":[],"by_key":{},"child":null}`, "cannot unmarshal number"},
		{"not an object", `[1]`, "is not a JSON object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out outer
			err := decodeStrict("some_op", []byte(c.json), &out)
			if c.want == "" {
				if err != nil {
					t.Fatalf("decodeStrict: %v", err)
				}
				if out.Name != "a" {
					t.Errorf("name %q, want a", out.Name)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrContract) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "some_op") {
				t.Fatalf("error %v, want an ErrContract naming some_op and %q", err, c.want)
			}
		})
	}
}
