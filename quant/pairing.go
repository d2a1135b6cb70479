package quant

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"phase0/llmstree"
	"phase0/verdict"
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
}

// BaseModel reads base_model from a model card's YAML front matter: a
// scalar (base_model: org/name) or the first item of a list.
func BaseModel(card []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(card))
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return ""
	}
	inList := false
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "---" {
			return ""
		}
		if inList {
			if item, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
				return unquote(item)
			}
			inList = false
		}
		if v, ok := strings.CutPrefix(line, "base_model:"); ok {
			if v = strings.TrimSpace(v); v == "" {
				inList = true
				continue
			}
			return unquote(v)
		}
	}
	return ""
}

func unquote(s string) string { return strings.Trim(strings.TrimSpace(s), `"'`) }

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
func CheckPairing(use llmstree.Use, declared string) *Pairing {
	p := &Pairing{Section: verdict.NewSection(), Bundle: use.Bundle, Key: use.Key, Reference: use.Reference, Declared: declared}
	switch {
	case use.Bundle == "":
		p.Summary = fmt.Sprintf("%s quantizes its reference %s on load: key %q pairs by construction", use.Folder, use.Reference, use.Key)
		return p
	case declared == "":
		p.Status = verdict.Warn
		p.Summary = fmt.Sprintf("%s declares no base_model in its model card: key %q's pairing with %s is unchecked", use.Bundle, use.Key, use.Reference)
		p.Find("%s", p.Summary)
		return p
	}
	for _, c := range use.Choices {
		if sameCheckpoint(c.Reference, declared) {
			p.RightKey = c.Key
			break
		}
	}
	if sameCheckpoint(use.Reference, declared) {
		p.Summary = fmt.Sprintf("key %q: %s declares base_model %s, the key's reference %s", use.Key, use.Bundle, declared, use.Reference)
		return p
	}
	right := "no key of MODEL_CHOICES names it"
	if p.RightKey != "" {
		right = fmt.Sprintf("key %q (%s) is the one that pairs it", p.RightKey, referenceOf(use.Choices, p.RightKey))
	}
	p.FailWith("%s/verify_adapter.py: key %q pairs %s with %s, but the bundle's model card declares base_model %s: every token gate of this key compares against a model the weights did not come from; %s",
		use.Folder, use.Key, use.Bundle, use.Reference, declared, right)
	p.Summary = p.Findings[0]
	return p
}

func referenceOf(choices []llmstree.Choice, key string) string {
	for _, c := range choices {
		if c.Key == key {
			return c.Reference
		}
	}
	return ""
}
