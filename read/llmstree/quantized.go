package llmstree

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Quantized is what a quantized deployment folder (llama32_1b_q4nx,
// qwen25_3b_q4 …) says about itself, read as text: the loader its weights
// module defines, the source checkpoints its verify_adapter.py pairs it with,
// and the hub ids of the bundles it loads.
type Quantized struct {
	// Module is the weights module, relative to the folder.
	Module string
	// Loader is how the module is loaded: a load_*weights* function, else a
	// class with layer_weights (the worker finds it by what the module
	// defines; this is the name the text shows, for the report).
	Loader string
	// Choices are MODEL_CHOICES' keys and their reference ids, in file order.
	Choices []Choice
	// Bundles are the hub ids the folder names besides its references: the
	// packaged weights it loads (FastFlowLM/Llama-3.2-1B-NPU2). Empty when
	// the folder quantizes its reference on load.
	Bundles []string
}

// Choice is one MODEL_CHOICES entry: a key and the reference hub id it names.
type Choice struct {
	Key, Reference string
}

var (
	quantFunc  = regexp.MustCompile(`(?m)^def (load_\w*weights\w*)\(`)
	quantClass = regexp.MustCompile(`(?m)^class (\w+)\b[^\n]*:`)
	layerAPI   = regexp.MustCompile(`(?m)^    def (layer_weights|layer_rms|embed_norm_lmhead)\(`)
	choicesAt  = regexp.MustCompile(`(?m)^MODEL_CHOICES\s*=\s*\{`)
	choiceItem = regexp.MustCompile(`^\s*(?:"([^"\n]*)"|'([^'\n]*)')\s*:\s*(?:"([^"\n]*)"|'([^'\n]*)'|([A-Za-z_]\w*))\s*,?\s*(?:#[^\n]*)?$`)
	nameAssign = `(?m)^%s\s*=\s*(?:"([^"\n]*)"|'([^'\n]*)')`
)

// quantLoader names the loader a quantized weights module defines: its
// load_*weights* function, else the first class with the per-layer API
// (layer_weights, layer_rms or embed_norm_lmhead). "" when it defines
// neither: not a quantized module.
func quantLoader(src []byte) string {
	if m := quantFunc.FindSubmatch(src); m != nil {
		return string(m[1]) + "()"
	}
	classes := quantClass.FindAllSubmatchIndex(src, -1)
	for i, c := range classes {
		end := len(src)
		if i+1 < len(classes) {
			end = classes[i+1][0]
		}
		if layerAPI.Match(src[c[1]:end]) {
			return "class " + string(src[c[2]:c[3]])
		}
	}
	return ""
}

// modelChoices reads MODEL_CHOICES = {"key": "org/name" | NAME, …} from a
// verify_adapter.py; a NAME value is resolved from a top-level NAME = "…"
// assignment in the same file. Entries that do not resolve to a hub id are
// skipped; a missing dict is no choices.
func modelChoices(src []byte) []Choice {
	loc := choicesAt.FindIndex(src)
	if loc == nil {
		return nil
	}
	body := src[loc[1]:]
	if end := bytes.IndexByte(body, '}'); end >= 0 {
		body = body[:end]
	} else {
		return nil
	}
	var out []Choice
	for line := range strings.Lines(string(body)) {
		for _, item := range strings.Split(line, ",") {
			m := choiceItem.FindStringSubmatch(item)
			if m == nil {
				continue
			}
			key, val := m[1]+m[2], m[3]+m[4]
			if m[5] != "" {
				val = assigned(src, m[5])
			}
			if ids := HubIDs([]byte(`"` + val + `"`)); len(ids) == 1 && !slices.ContainsFunc(out, func(c Choice) bool { return c.Key == key }) {
				out = append(out, Choice{Key: key, Reference: val})
			}
		}
	}
	return out
}

// assigned is the string literal a top-level NAME = "…" gives, or "".
func assigned(src []byte, name string) string {
	re, err := regexp.Compile(fmt.Sprintf(nameAssign, regexp.QuoteMeta(name)))
	if err != nil {
		return ""
	}
	m := re.FindSubmatch(src)
	if m == nil {
		return ""
	}
	return string(m[1]) + string(m[2])
}

// References are the distinct reference ids of the choices, in order.
func (q *Quantized) References() []string {
	var out []string
	for _, c := range q.Choices {
		if !slices.ContainsFunc(out, func(s string) bool { return strings.EqualFold(s, c.Reference) }) {
			out = append(out, c.Reference)
		}
	}
	return out
}

// Use is one quantized folder's key to validate: the folder, the
// MODEL_CHOICES key, its source checkpoint and the bundle the folder loads
// ("" when it quantizes the reference on load).
type Use struct {
	Folder    string
	Module    string
	Loader    string
	Key       string
	Reference string
	Bundle    string
	// Choices are all of the folder's keys, for the pairing check to name
	// the key that would be right.
	Choices []Choice
}

// QuantizedUses returns what validating id through the tree means for the
// quantized folders: for a bundle id, every key of every folder that loads
// it; for a reference id, the keys pairing it in the folder named name
// (every quantized folder naming it when name is ""). Folders and keys
// keep the tree's order.
func QuantizedUses(folders []Folder, id, name string) []Use {
	var out []Use
	for _, f := range folders {
		q := f.Quant
		if q == nil || (name != "" && f.Name != name) {
			continue
		}
		bundle := ""
		if len(q.Bundles) > 0 {
			bundle = q.Bundles[0]
		}
		byBundle := slices.ContainsFunc(q.Bundles, func(b string) bool { return strings.EqualFold(b, id) })
		for _, c := range q.Choices {
			if byBundle || strings.EqualFold(c.Reference, id) {
				b := bundle
				if byBundle {
					b = id
				}
				out = append(out, Use{Folder: f.Name, Module: q.Module, Loader: q.Loader, Key: c.Key, Reference: c.Reference, Bundle: b, Choices: q.Choices})
			}
		}
	}
	return out
}

// readQuantized fills f.Quant when the folder's weights module is a
// quantized loader rather than a Phase 0 one. weightsSrc is
// <name>_weights.py, adapterSrc verify_adapter.py (nil when absent).
func (f *Folder) readQuantized(weightsSrc, adapterSrc []byte) {
	if f.Phase0 || weightsSrc == nil {
		return
	}
	loader := quantLoader(weightsSrc)
	choices := modelChoices(adapterSrc)
	if loader == "" || len(choices) == 0 {
		return
	}
	q := &Quantized{Module: f.Name + "_weights.py", Loader: loader, Choices: choices}
	for _, id := range append(slices.Clone(f.IDs), HubIDs(weightsSrc)...) {
		ref := slices.ContainsFunc(choices, func(c Choice) bool { return strings.EqualFold(c.Reference, id) })
		if !ref && !slices.ContainsFunc(q.Bundles, func(b string) bool { return strings.EqualFold(b, id) }) {
			q.Bundles = append(q.Bundles, id)
		}
	}
	f.Quant = q
}
