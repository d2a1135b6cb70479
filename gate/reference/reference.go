// Package reference reads a recorded reference (or candidate) folder: the
// HF bf16 greedy continuations with their top-k per step, and the diagnosis
// intermediates, as phase0_shim/reference.py writes them. It also computes the
// key that says whether a recording still matches its model.
//
// A recording is <dir>/reference.json (metadata; its role is "reference" or
// "candidate") and <dir>/reference.safetensors, which holds these tensors and
// no others (other files in <dir> are not part of the recording and are not read):
//
//	prompt.<i>.tokens         I64 [n_tokens]      the prompt's token ids
//	prompt.<i>.chosen         I64 [steps]         the runner's chosen (greedy) token per step
//	prompt.<i>.topk_ids       I64 [steps, k]      the k best ids per step, best first
//	prompt.<i>.topk_logprobs  F32 [steps, k]      their log-probabilities (NaN when logits were not finite)
//	prompt.<i>.nonfinite      I64 [steps]         how many logits of the step were NaN/Inf
//	diagnosis.layer.<l>.ffn_out      F32 [seq, emb]  (canonical prompt, lite_mode=False)
//	diagnosis.final_hidden_normed    F32 [seq, emb]
//	diagnosis.logits                 F32 [vocab]     last position of the canonical prompt
package reference

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"phase0/internal/boundedfile"
	"phase0/internal/strictjson"

	"phase0/read/safetensors"
)

const (
	// Format names this layout; a reader refuses any other.
	Format      = "phase0-reference/1"
	MetaFile    = "reference.json"
	TensorsFile = "reference.safetensors"
	// DefaultSteps and DefaultTopK are upstream verify's GATE_N_TOKENS and GATE_K.
	DefaultSteps = 32
	DefaultTopK  = 5

	// The roles a recording may have: phase0's HF reference, or a candidate
	// (any runner recorded through phase0_shim.reference, an fp32 self-check).
	RoleReference = "reference"
	RoleCandidate = "candidate"
	// layerProbe is the only per-layer diagnosis probe the format defines
	// (phase0_shim.reference.PROBE).
	layerProbe = "ffn_out"

	maxMetaBytes    = 4 << 20
	maxTensorsBytes = 8 << 30
)

// ErrFormat marks a folder that is not a readable recording.
var ErrFormat = errors.New("not a phase0 reference recording")

// Meta is reference.json.
type Meta struct {
	Format              string             `json:"format"`
	Role                string             `json:"role"`
	Runner              string             `json:"runner"`
	RunnerPath          string             `json:"runner_path,omitempty"`
	ModelID             string             `json:"model_id,omitempty"`
	ModelDir            string             `json:"model_dir,omitempty"`
	Revision            string             `json:"revision,omitempty"`
	Dtype               string             `json:"dtype"`
	TokenizerSHA256     string             `json:"tokenizer_sha256"`
	PromptStyle         string             `json:"prompt_style,omitempty"`
	PromptsFile         string             `json:"prompts_file,omitempty"`
	Prompts             []string           `json:"prompts"`
	CanonicalPrompt     int                `json:"canonical_prompt"`
	DecodeSteps         int                `json:"decode_steps"`
	TopK                int                `json:"top_k"`
	NLayers             int                `json:"n_layers,omitempty"`
	TorchVersion        string             `json:"torch_version,omitempty"`
	TransformersVersion string             `json:"transformers_version,omitempty"`
	TensorsSHA256       string             `json:"tensors_sha256"`
	TensorsBytes        int64              `json:"tensors_bytes"`
	Seconds             map[string]float64 `json:"seconds,omitempty"`
	TorchThreads        int                `json:"torch_threads,omitempty"` // intra-op threads the recording ran with
	Created             string             `json:"created,omitempty"`
	Key                 *Key               `json:"key,omitempty"`
	KeySHA256           string             `json:"key_sha256,omitempty"`
}

// Prompt is one prompt's greedy continuation.
type Prompt struct {
	Text         string
	Tokens       []int64
	Chosen       []int64
	TopKIDs      [][]int64
	TopKLogprobs [][]float32
	Nonfinite    []int64
}

// Probe is one diagnosis tensor, flattened row-major.
type Probe struct {
	Name  string // ffn_out, final_hidden_normed, logits
	Layer int    // -1 when the probe belongs to no layer (logits)
	Shape []int64
	Data  []float32
}

// Recording is a read and validated recording folder.
type Recording struct {
	Dir     string
	Meta    Meta
	Prompts []Prompt
	Probes  []Probe // layers ascending, final_hidden_normed as layer n_layers-1, logits last
	Bytes   int64   // both files on disk
}

func formatErr(path, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", path, ErrFormat, fmt.Sprintf(format, args...))
}

// ReadMeta reads and checks reference.json alone (cheap: for the reuse decision).
func ReadMeta(dir string) (*Meta, error) {
	path := filepath.Join(dir, MetaFile)
	b, err := boundedfile.Read(path, maxMetaBytes)
	if err != nil {
		return nil, err
	}
	return parseMeta(path, b)
}

// parseMeta decodes and checks reference.json's bytes (path names it in messages).
func parseMeta(path string, b []byte) (*Meta, error) {
	// Strict JSON first: a repeated key ("role" twice) would let two
	// readers see two recordings; bytes that are not UTF-8 become U+FFFD.
	if err := strictjson.Check(b); err != nil {
		return nil, formatErr(path, "%v", err)
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, formatErr(path, "%v", err)
	}
	if err := checkMeta(path, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// Read reads a recording folder, checks the tensors file against the digest
// reference.json names, and checks every tensor's dtype and shape.
func Read(dir string) (*Recording, error) {
	m, err := ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, TensorsFile)
	data, err := boundedfile.Read(path, maxTensorsBytes)
	if err != nil {
		return nil, err
	}
	if m.TensorsBytes > 0 && m.TensorsBytes != int64(len(data)) {
		return nil, formatErr(path, "%d bytes, but %s names tensors_bytes %d (a partial or mixed recording)", len(data), MetaFile, m.TensorsBytes)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != m.TensorsSHA256 {
		return nil, formatErr(path, "sha256 %s, but %s names %s (a partial or mixed recording)", got, MetaFile, m.TensorsSHA256)
	}
	h, err := safetensors.ReadHeader(bytes.NewReader(data), int64(len(data)), TensorsFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrFormat, err)
	}
	byName := map[string]safetensors.Tensor{}
	for _, t := range h.Tensors {
		byName[t.Name] = t
	}
	r := &Recording{Dir: dir, Meta: *m, Bytes: int64(len(data))}
	if st, err := os.Stat(filepath.Join(dir, MetaFile)); err == nil {
		r.Bytes += st.Size()
	}
	tr := tensorReader{path: path, data: data, byName: byName}
	if err := tr.checkNames(len(m.Prompts), m.NLayers); err != nil {
		return nil, err
	}
	steps, k := int64(m.DecodeSteps), int64(m.TopK)
	for i, text := range m.Prompts {
		p := Prompt{Text: text}
		name := func(field string) string { return "prompt." + strconv.Itoa(i) + "." + field }
		if p.Tokens, err = tr.ints(name("tokens"), -1); err == nil {
			p.Chosen, err = tr.ints(name("chosen"), steps)
		}
		var ids []int64
		var lps []float32
		if err == nil {
			ids, err = tr.ints(name("topk_ids"), steps, k)
		}
		if err == nil {
			lps, err = tr.floats(name("topk_logprobs"), steps, k)
		}
		if err == nil {
			p.Nonfinite, err = tr.ints(name("nonfinite"), steps)
		}
		if err != nil {
			return nil, err
		}
		for s := int64(0); s < steps; s++ {
			p.TopKIDs = append(p.TopKIDs, ids[s*k:(s+1)*k])
			p.TopKLogprobs = append(p.TopKLogprobs, lps[s*k:(s+1)*k])
		}
		if err := checkValues(path, i, &p); err != nil {
			return nil, err
		}
		r.Prompts = append(r.Prompts, p)
	}
	r.Probes, err = tr.probes(m.NLayers)
	if err != nil {
		return nil, err
	}
	return r, nil
}

type tensorReader struct {
	path   string
	data   []byte
	byName map[string]safetensors.Tensor
}

// get returns a tensor's bytes after checking dtype and shape (-1 = any length).
func (tr tensorReader) get(name, dtype string, shape ...int64) (safetensors.Tensor, []byte, error) {
	t, ok := tr.byName[name]
	if !ok {
		return t, nil, formatErr(tr.path, "tensor %s is missing", name)
	}
	if t.DType != dtype {
		return t, nil, formatErr(tr.path, "tensor %s is %s, want %s", name, t.DType, dtype)
	}
	if len(t.Shape) != len(shape) {
		return t, nil, formatErr(tr.path, "tensor %s has shape %v, want %d dimensions", name, t.Shape, len(shape))
	}
	for d, want := range shape {
		if want >= 0 && t.Shape[d] != want {
			return t, nil, formatErr(tr.path, "tensor %s has shape %v, want %v (-1 = any)", name, t.Shape, shape)
		}
	}
	// ReadHeader checked that every tensor lies inside the file.
	return t, tr.data[t.Begin:t.End], nil
}

func (tr tensorReader) ints(name string, shape ...int64) ([]int64, error) {
	_, b, err := tr.get(name, "I64", shape...)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(b)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out, nil
}

func (tr tensorReader) floats(name string, shape ...int64) ([]float32, error) {
	_, b, err := tr.get(name, "F32", shape...)
	if err != nil {
		return nil, err
	}
	return f32s(b), nil
}

func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// probes collects the diagnosis tensors in upstream's table order.
func (tr tensorReader) probes(nLayers int) ([]Probe, error) {
	var out []Probe
	last := -1
	for name, t := range tr.byName {
		rest, ok := strings.CutPrefix(name, "diagnosis.layer.")
		if !ok {
			continue
		}
		num, probe, _ := strings.Cut(rest, ".")
		layer, ok := index(num)
		if !ok { // checkNames let none through
			return nil, formatErr(tr.path, "tensor %s: want diagnosis.layer.<n>.%s", name, layerProbe)
		}
		_, b, err := tr.get(name, "F32", slices.Repeat([]int64{-1}, len(t.Shape))...)
		if err != nil {
			return nil, err
		}
		out = append(out, Probe{Name: probe, Layer: layer, Shape: t.Shape, Data: f32s(b)})
		last = max(last, layer)
	}
	slices.SortFunc(out, func(a, b Probe) int { return a.Layer - b.Layer })
	// Upstream's table puts the post-final-norm hidden state in the last layer's row.
	if nLayers > 0 {
		last = nLayers - 2
	}
	for _, extra := range []struct {
		name  string
		layer int
	}{{"final_hidden_normed", last + 1}, {"logits", -1}} {
		t, ok := tr.byName["diagnosis."+extra.name]
		if !ok {
			continue
		}
		_, b, err := tr.get(t.Name, "F32", slices.Repeat([]int64{-1}, len(t.Shape))...)
		if err != nil {
			return nil, err
		}
		out = append(out, Probe{Name: extra.name, Layer: extra.layer, Shape: t.Shape, Data: f32s(b)})
	}
	return out, nil
}
