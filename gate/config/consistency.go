// Package config is gate 3, config consistency: the config phase0
// extracted (model.Config, the one source of truth) is compared with every
// other place the same facts live — the checkpoint's tensor shapes, the
// generated LlamaConfig(), and what transformers itself resolves from the
// same folder. Each disagreement names the field, the source and both values.
package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"phase0/gate/verdict"
)

// Sources a finding can come from.
const (
	SourceWeights      = "weights"          // the checkpoint's tensor shapes
	SourceGenerated    = "generated_config" // the generated LlamaConfig()
	SourceModule       = "module_config"    // a hand-written module's LlamaConfig()
	SourceTransformers = "transformers"     // AutoConfig and the model it builds
)

// Finding is a config value that disagrees with another source.
type Finding struct {
	Field   string `json:"field"`
	Source  string `json:"source"`
	Config  any    `json:"config"` // phase0's value
	Actual  any    `json:"actual"` // the other source's value
	Message string `json:"message"`
}

// Consistency is gates.config_consistency in the report.
type Consistency struct {
	verdict.Section
	Checked    []string  `json:"checked"`
	Mismatches []Finding `json:"mismatches"`
	// Notes are passing checks worth reading (e.g. a tied lm_head that is
	// byte-identical to the embeddings).
	Notes []string `json:"notes"`
	// Sources lists which sources were compared.
	Sources []string `json:"sources"`

	// absent are fields the module's Config lacks that its behaviour decides,
	// each with the sentence naming it (note on judgedBy).
	absent map[string]string
}

// New returns an empty passing section.
func New() *Consistency {
	c := &Consistency{Section: verdict.NewSection(), Checked: []string{}, Mismatches: []Finding{}, Notes: []string{}, Sources: []string{}}
	c.summarize()
	return c
}

// Clone is a copy that shares nothing with c: the config_facts stage
// completes a copy of the weights stage's cross-check, which stays as
// that stage judged it.
func (c *Consistency) Clone() *Consistency {
	out := *c
	out.Findings = slices.Clone(c.Findings)
	out.Checked, out.Mismatches, out.Notes, out.Sources = slices.Clone(c.Checked), slices.Clone(c.Mismatches), slices.Clone(c.Notes), slices.Clone(c.Sources)
	out.absent = maps.Clone(c.absent)
	return &out
}

// add records a finding and fails the section.
func (c *Consistency) add(f Finding) {
	c.Mismatches = append(c.Mismatches, f)
	c.FailWith("config %s (%s): %s", f.Field, f.Source, f.Message)
	c.summarize()
}

func (c *Consistency) check(source, field string) {
	c.Checked = append(c.Checked, prefix(source)+field)
	c.summarize()
}

func (c *Consistency) source(s string) {
	c.Sources = append(c.Sources, s)
}

// Skip marks the gate as not run and says why.
func (c *Consistency) Skip(why string) {
	c.Status = verdict.Skip
	c.Summary = why
}

func prefix(source string) string {
	switch source {
	case SourceGenerated:
		return "generated."
	case SourceModule:
		return "module."
	case SourceTransformers:
		return "transformers."
	case SourceBehaviour:
		return "behaviour."
	}
	return ""
}

func (c *Consistency) summarize() {
	c.Summary = fmt.Sprintf("%d checks, %d mismatches", len(c.Checked), len(c.Mismatches))
	if len(c.Sources) > 0 {
		c.Summary += " (" + strings.Join(c.Sources, ", ") + ")"
	}
}
