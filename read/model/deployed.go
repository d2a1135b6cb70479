package model

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
)

// Deployment is a family Phase 0 does not bring up (its pipeline cannot
// scaffold the family's attention or rotary) but whose existing quantized
// deployment in the mlir-air tree it validates: the reference's config.json
// is read for that path only. A new bring-up of the family stays REJECTED,
// and the rejection names the folder.
type Deployment interface {
	Family
	// Folder is the tree folder that deploys the family ("gemma3_4b_q4nx").
	Folder() string
	// Text is the text model's settings: config.json itself, or the part
	// of it a multimodal class keeps them in (text_config).
	Text(r *Raw) (*Raw, error)
	// Shared is the text settings as the shared extraction reads them:
	// without what it does not implement (LongRoPE, per-layer-type RoPE),
	// which Deployed reads.
	Shared(text *Raw) *Raw
	// Deployed reads the family's settings beyond Config from the text
	// settings, and completes c with what the shared extraction cannot
	// read (an activation under another key).
	Deployed(text *Raw, c *Config) (*Deployed, error)
}

// Deployed is what a deployed family's config says beyond Config: the
// settings its quantized module hard-codes and its tensors' conventions.
type Deployed struct {
	// Folder is the tree folder that deploys the family.
	Folder string `json:"folder"`
	// Prefixes are where the reference checkpoint may keep the text
	// model's tensors (model.layers.<k>. lives under them), tried in order.
	Prefixes []string `json:"prefixes"`

	// Gemma 3: RMSNorm computes x · (1 + w), the embedding is multiplied by
	// √hidden, sliding-window layers with their own RoPE base.
	NormPlusOne        bool    `json:"norm_plus_one,omitempty"`
	EmbedScale         float64 `json:"embed_scale,omitempty"`
	SlidingWindow      int     `json:"sliding_window,omitempty"`
	SlidingPattern     int     `json:"sliding_pattern,omitempty"`
	LocalRopeBase      float64 `json:"local_rope_base,omitempty"`
	QueryPreAttnScalar float64 `json:"query_pre_attn_scalar,omitempty"`

	// Phi-3: fused projections, partial rotary and LongRoPE.
	FusedQKV         bool      `json:"fused_qkv,omitempty"`
	FusedGateUp      bool      `json:"fused_gate_up,omitempty"`
	PartialRotary    float64   `json:"partial_rotary,omitempty"`
	RopeDim          int       `json:"rope_dim,omitempty"`
	OriginalMaxPos   int       `json:"original_max_position_embeddings,omitempty"`
	MaxPos           int       `json:"max_position_embeddings,omitempty"`
	ShortFactor      []float64 `json:"short_factor,omitempty"`
	LongFactor       []float64 `json:"long_factor,omitempty"`
	AttentionScaling float64   `json:"attention_scaling,omitempty"`
}

// GlobalLayer says whether layer k of a sliding-window family attends
// globally: every SlidingPattern-th layer ((k+1) % pattern == 0); every
// layer when the family has no pattern.
func (d *Deployed) GlobalLayer(k int) bool {
	return d.SlidingPattern <= 0 || (k+1)%d.SlidingPattern == 0
}

var deployments = []Deployment{gemma3Family{}, phi3Family{}}

// DeploymentFor returns the deployed family of a transformers architecture.
func DeploymentFor(arch string) (Deployment, bool) {
	for _, d := range deployments {
		if d.Architecture() == arch {
			return d, true
		}
	}
	return nil, false
}

// DeployedFolders maps each deployed family's architecture to its tree folder.
func DeployedFolders() map[string]string {
	out := map[string]string{}
	for _, d := range deployments {
		out[d.Architecture()] = d.Folder()
	}
	return out
}

// AnalyzeDeployed reads the config.json of a reference checkpoint that an
// existing quantized deployment of the tree is judged against. For a
// supported family it is Analyze; for a deployed family (Gemma 3, Phi-3)
// the architecture gate's refusal of a new bring-up does not apply: the
// text settings are extracted and validated, and Analysis.Deployed carries
// the family's own. ok is false when the config is neither.
func AnalyzeDeployed(r *Raw) *Analysis {
	arch := ""
	if archs, named, err := r.Strings("architectures"); err == nil && named && len(archs) == 1 {
		arch = archs[0]
	}
	dep, ok := DeploymentFor(arch)
	if !ok {
		return Analyze(r)
	}
	a := &Analysis{Architecture: arch, Family: dep}
	a.ModelType, _, _ = r.String("model_type")
	reject := func(err error) *Analysis {
		a.Rejections = append(a.Rejections, Rejection{Code: CodeInvalidConfig, Message: fmt.Sprintf("%s: %v", dep.Name(), err)})
		return a
	}
	text, err := dep.Text(r)
	if err != nil {
		return reject(err)
	}
	if r.Set("quantization_config") {
		a.Rejections = append(a.Rejections, Rejection{Code: CodeQuantized, Message: fmt.Sprintf("config.json has quantization_config (%s): the reference must be the bf16 checkpoint", quantMethod(r))})
		return a
	}
	cfg, err := a.extract(dep.Shared(text))
	if err != nil {
		return reject(err)
	}
	if cfg.DType == "" {
		for _, key := range []string{"dtype", "torch_dtype"} {
			if v, ok, err := r.String(key); err == nil && ok {
				cfg.DType = v
				break
			}
		}
	}
	d, err := dep.Deployed(text, cfg)
	if err != nil {
		return reject(err)
	}
	if err := cfg.Validate(); err != nil {
		return reject(err)
	}
	a.Config, a.Deployed = cfg, d
	return a
}

// without is r without keys: what the shared extraction must not read
// (a rope scaling it does not implement, read by the family instead).
func (r *Raw) without(keys ...string) *Raw {
	fields := maps.Clone(r.fields)
	for _, k := range keys {
		delete(fields, k)
	}
	return &Raw{fields: fields}
}

// sub is the JSON object under key as a Raw of its own.
func (r *Raw) sub(key string) (*Raw, error) {
	m, ok, err := r.Object(key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("config.json: required key %s is missing", key)
	}
	return &Raw{fields: m}, nil
}

// ropeObject is the RoPE settings object: rope_parameters (transformers 5)
// or rope_scaling (transformers 4); nil when neither is set.
func (r *Raw) ropeObject() (map[string]json.RawMessage, error) {
	for _, key := range []string{"rope_parameters", "rope_scaling"} {
		if m, ok, err := r.Object(key); err != nil || ok {
			return m, err
		}
	}
	return nil, nil
}

// floats reads a JSON array of numbers under key of m.
func floats(m map[string]json.RawMessage, key string) ([]float64, error) {
	v, ok := m[key]
	if !ok {
		return nil, fmt.Errorf("config.json: rope_scaling needs %s", key)
	}
	var out []float64
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, fmt.Errorf("config.json: rope_scaling %s must be a list of numbers: %w", key, err)
	}
	return out, nil
}

// deployedNote is what the architecture gate adds to a deployed family's
// refusal: the tree folder that validates an existing deployment.
func deployedNote(arch string) string {
	d, ok := DeploymentFor(arch)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (a new %s bring-up cannot be scaffolded; an existing deployment is validated through the tree's %s folder: phase0 run <its bundle or reference> --llms-dir <llms>)", strings.TrimSpace(d.Title()), d.Folder())
}

// DeployedFamily is the family of a reference the tree deploys but the
// skill cannot bring up (Gemma 3, Phi-3) and its embedding scale, as
// quantized gate 1 reads it; "" for the supported families (or a nil a).
func (a *Analysis) DeployedFamily() (string, float64) {
	if a == nil || a.Deployed == nil {
		return "", 0
	}
	return a.Family.Name(), a.Deployed.EmbedScale
}
