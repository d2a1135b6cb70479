package quant

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"

	"phase0/gate/verdict"
	"phase0/read/llmstree"
	"phase0/read/tensornames"
	"phase0/wire"

	"go.yaml.in/yaml/v3"
)

// Pairing is the check that a MODEL_CHOICES key's reference is the
// checkpoint the bundle's weights came from, as its model card declares.
type Pairing struct {
	verdict.Section
	Bundle    string `json:"bundle"`
	Key       string `json:"key"`
	Reference string `json:"reference"`
	// Declared is the card's base_model ("" when the bundle has no card
	// or the card declares none).
	Declared string `json:"declared"`
	// RightKey is the key whose reference is the declared source, "" when none.
	RightKey string `json:"right_key,omitempty"`
	// Closeness backs the pairing with numbers, when other candidate
	// checkpoints are cached: layer 0's dequantized projections against
	// each (the key's reference first).
	Closeness []Closeness `json:"closeness,omitempty"`
}

// Closeness is how close layer 0's dequantized projections are to one
// checkpoint: their mean cosine.
type Closeness struct {
	ID      string  `json:"id"`
	Cosine  float64 `json:"mean_cosine"`
	Tensors int     `json:"tensors"`
}

// CandidateID names a candidate checkpoint's folder.
type CandidateID struct{ ID, Dir string }

// MeasureCloseness computes the closeness of layer 0's projections to the
// key's reference (from gate 1's facts) and to each candidate the worker
// compared. With fewer than two checkpoints there is nothing to tell apart.
func MeasureCloseness(facts *wire.QuantFactsResult, reference string, candidates []CandidateID) []Closeness {
	if len(facts.Candidates) == 0 {
		return nil
	}
	ref := Closeness{ID: reference}
	for _, t := range facts.Tensors {
		if t.Layer == 0 && t.Stats != nil && tensornames.IsProjection(t.Field) {
			ref.Cosine += cosine(*t.Stats)
			ref.Tensors++
		}
	}
	out := []Closeness{mean(ref)}
	for _, c := range facts.Candidates {
		cl := Closeness{ID: c.ReferenceDir}
		for _, cd := range candidates {
			if cd.Dir == c.ReferenceDir {
				cl.ID = cd.ID
			}
		}
		for _, s := range c.Stats {
			cl.Cosine += cosine(s)
			cl.Tensors++
		}
		out = append(out, mean(cl))
	}
	return out
}

func mean(c Closeness) Closeness {
	if c.Tensors > 0 {
		c.Cosine /= float64(c.Tensors)
	}
	return c
}

// closenessMargin: a bundle is "closer" to one checkpoint when its mean
// cosine beats the next by this much. A base and an instruct checkpoint of
// one model share most of their weights (fine-tuning moves them little),
// so their cosines differ in the third decimal, not the first.
const closenessMargin = 1e-3

// closest is the checkpoint the numbers name, "" when they do not tell
// (one candidate, or two within the margin).
func closest(cs []Closeness) (Closeness, bool) {
	if len(cs) < 2 {
		return Closeness{}, false
	}
	sorted := slices.Clone(cs)
	slices.SortFunc(sorted, func(a, b Closeness) int { return cmp.Compare(b.Cosine, a.Cosine) })
	return sorted[0], sorted[0].Cosine-sorted[1].Cosine > closenessMargin && sorted[0].Tensors > 0
}

// closenessText is the numbers in one line.
func closenessText(cs []Closeness) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s %.4f", c.ID, c.Cosine))
	}
	return "layer 0's dequantized projections, mean cosine: " + strings.Join(parts, ", ")
}

// BaseModel reads base_model from a model card's YAML front matter (the
// lines between a first line "---" and the next "---" or "..."), parsed as
// YAML: a scalar (base_model: org/name, a comment after it or not) or the
// first item of a list (block or flow, base_model: [org/name]). "" when the
// card has no front matter, it is not YAML, or it names no base model.
func BaseModel(card []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(card))
	sc.Buffer(make([]byte, 64<<10), len(card)+1)
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return ""
	}
	var front strings.Builder
	closed := false
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if t := strings.TrimSpace(line); t == "---" || t == "..." {
			closed = true
			break
		}
		front.WriteString(line)
		front.WriteByte('\n')
	}
	var meta struct {
		BaseModel any `yaml:"base_model"`
	}
	if !closed || yaml.Unmarshal([]byte(front.String()), &meta) != nil {
		return ""
	}
	switch v := meta.BaseModel.(type) {
	case string:
		return strings.TrimSpace(v)
	case []any:
		for _, item := range v {
			if s, ok := item.(string); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s)
			}
		}
	}
	return ""
}

// sameCheckpoint says whether two hub ids name the same checkpoint: equal,
// or a licence-free mirror of it (NousResearch/Meta-Llama-3.1-8B-Instruct
// mirrors meta-llama/Llama-3.1-8B-Instruct, unsloth/gemma-3-4b-it
// google/gemma-3-4b-it): same name once the org and a "Meta-" prefix are
// dropped.
func sameCheckpoint(a, b string) bool {
	return strings.EqualFold(a, b) || mirrorName(a) == mirrorName(b)
}

func mirrorName(id string) string {
	_, name, _ := strings.Cut(id, "/")
	name = strings.ToLower(name)
	return strings.TrimPrefix(name, "meta-")
}

// CheckPairing judges use's key against the source its bundle declares.
// A folder that quantizes its reference on load (no bundle) pairs by
// construction.
func CheckPairing(use llmstree.Use, declared string, closeness []Closeness) *Pairing {
	p := &Pairing{Section: verdict.NewSection(), Bundle: use.Bundle, Key: use.Key, Reference: use.Reference, Declared: declared, Closeness: closeness}
	p.checkCard(use, declared)
	p.judgeNumbers(use)
	return p
}

// checkCard judges the key against the card's declared source.
func (p *Pairing) checkCard(use llmstree.Use, declared string) {
	switch {
	case use.Bundle == "":
		p.Summary = fmt.Sprintf("%s quantizes its reference %s on load: key %q pairs by construction", use.Folder, use.Reference, use.Key)
		return
	case declared == "":
		p.Status = verdict.Warn
		p.Summary = fmt.Sprintf("%s declares no base_model in its model card: key %q's pairing with %s is unchecked", use.Bundle, use.Key, use.Reference)
		p.Find("%s", p.Summary)
		return
	}
	for _, c := range use.Choices {
		if sameCheckpoint(c.Reference, declared) {
			p.RightKey = c.Key
			break
		}
	}
	if sameCheckpoint(use.Reference, declared) {
		p.Summary = fmt.Sprintf("key %q: %s declares base_model %s, the key's reference %s", use.Key, use.Bundle, declared, use.Reference)
		if _, ok := closest(p.Closeness); ok {
			p.Summary += "; the numbers agree (" + closenessText(p.Closeness) + ")"
		}
		return
	}
	right := "no key of MODEL_CHOICES names it"
	if p.RightKey != "" {
		right = fmt.Sprintf("key %q (%s) is the one that pairs it", p.RightKey, referenceOf(use.Choices, p.RightKey))
	}
	p.FailWith("%s/verify_adapter.py: key %q pairs %s with %s, but the bundle's model card declares base_model %s: every token gate of this key compares against a model the weights did not come from; %s",
		use.Folder, use.Key, use.Bundle, use.Reference, declared, right)
	p.Summary = p.Findings[0]
}

func referenceOf(choices []llmstree.Choice, key string) string {
	for _, c := range choices {
		if c.Key == key {
			return c.Reference
		}
	}
	return ""
}

// judgeNumbers fails the key when the dequantized weights are measurably
// closer to another cached checkpoint than to the key's reference.
func (p *Pairing) judgeNumbers(use llmstree.Use) {
	best, ok := closest(p.Closeness)
	if !ok || sameCheckpoint(best.ID, use.Reference) {
		return
	}
	right := "no key of MODEL_CHOICES names it"
	for _, c := range use.Choices {
		if sameCheckpoint(c.Reference, best.ID) {
			p.RightKey = c.Key
			right = fmt.Sprintf("key %q (%s) is the one that pairs it", c.Key, c.Reference)
			break
		}
	}
	wasFail := p.Status == verdict.Fail
	p.Status = verdict.Pass // a card's WARN gives way to the numbers' FAIL
	p.FailWith("%s/verify_adapter.py: key %q pairs %s with %s, but the bundle's weights are closest to %s (%s): %s",
		use.Folder, use.Key, use.Bundle, use.Reference, best.ID, closenessText(p.Closeness), right)
	if !wasFail {
		p.Summary = p.Findings[len(p.Findings)-1]
	}
}
