package wire

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func keys(t reflect.Type) string {
	var out []string
	for k := range Fields(t) {
		out = append(out, k)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// An embedded struct's keys are the outer struct's own, as encoding/json
// sees them (LoaderFactsResult, TopToken); omitempty marks the optional ones.
func TestFieldsFlattensEmbedded(t *testing.T) {
	if got, want := keys(reflect.TypeFor[TopToken]()), "id in_tokenizer logit placeholder special text token"; got != want {
		t.Errorf("TopToken keys %s, want %s", got, want)
	}
	if got := Fields(reflect.TypeFor[RecordReferenceArgs]()); len(got) != 15 || got["model_dir"].Optional || !got["quant"].Optional {
		t.Errorf("RecordReferenceArgs keys %s: want BaselineArgs' 10 (quant optional) and its own 5", keys(reflect.TypeFor[RecordReferenceArgs]()))
	}
	if own := OwnFields(reflect.TypeFor[RecordReferenceArgs]()); len(own) != 5 || own[0].Name != "steps" {
		t.Errorf("RecordReferenceArgs' own keys %+v, want steps, top_k, dtype, out_dir, meta", own)
	}
}
