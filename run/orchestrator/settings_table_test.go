package orchestrator

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"phase0/run/reuse"
	"phase0/run/settings"
)

// notSettings are the Settings fields no settings.Table row fills: the
// invocation's plumbing and `reference`'s own flags.
var notSettings = []string{"Env", "HeadersOnly", "Progress", "OnStage", "ProgressBars", "ReferenceDtype", "ReferenceOut", "Sessions", "Probes"}

// Every Settings field is a table row's (or plumbing), of the row's type.
func TestSettingsFieldsAreTableRows(t *testing.T) {
	var s Settings
	for _, row := range settings.Table {
		if _, err := row.Get(&s); err != nil {
			t.Error(err)
		}
	}
	typ := reflect.TypeFor[Settings]()
	for i := range typ.NumField() {
		name := typ.Field(i).Name
		if slices.Contains(notSettings, name) {
			continue
		}
		if !slices.ContainsFunc(settings.Table, func(r settings.Setting) bool { return r.Field == name }) {
			t.Errorf("Settings.%s has no row in settings.Table (nor is it listed in notSettings)", name)
		}
	}
}

// The reuse inputs are exactly the settings the table marks Verdict, by key,
// a path made absolute and a duration as text.
func TestReuseInputsAreVerdictSettings(t *testing.T) {
	s := &Settings{LLMSDir: "rel/llms", Timeout: 90 * time.Second, Workers: 3, Fresh: true, MaxSeq: 64}
	in, err := reuse.StampSettings("run", "m", s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"command", "model"}
	for _, row := range settings.Table {
		if row.Verdict {
			want = append(want, row.Key)
		}
	}
	var got []string
	for k := range in {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("reuse inputs %v, want %v", got, want)
	}
	if d := in["llms_dir"].(string); d == "rel/llms" || d == "" {
		t.Errorf("llms_dir stamped as %q, want it absolute", d)
	}
	if in["timeout"] != "1m30s" || in["max_seq"] != 64 {
		t.Errorf("timeout %v, max_seq %v", in["timeout"], in["max_seq"])
	}
}
