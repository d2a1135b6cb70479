package wire

import "encoding/json"

// ConfigFactsResult is the module's LlamaConfig() (null without a module)
// and what transformers resolves for the folder.
type ConfigFactsResult struct {
	Generated    *GeneratedFacts    `json:"generated"`
	Transformers *TransformersFacts `json:"transformers"`
}

// GeneratedFacts is a module's LlamaConfig(): every field as Python holds
// it, types kept (28.0 is not 28, 0 is not false).
type GeneratedFacts struct {
	Class  string                     `json:"class"`
	Fields map[string]json.RawMessage `json:"fields"`
}

// TransformersFacts is what transformers resolves for the model folder:
// AutoConfig's attributes, and the parameters (name → shape) of the model it
// builds from them (on the meta device; tied lm_head omitted, as a
// checkpoint omits it).
type TransformersFacts struct {
	Class      string                     `json:"class"`
	Attributes map[string]json.RawMessage `json:"attributes"`
	Parameters map[string][]int64         `json:"parameters"`
	Version    string                     `json:"transformers_version"`
}

// ModuleConfigArgs names a weights module to import.
type ModuleConfigArgs struct {
	WeightsModule string `json:"weights_module"`
}

// ModuleConfigResult is the module's LlamaConfig() as written.
type ModuleConfigResult struct {
	Generated *GeneratedFacts `json:"generated"`
}

// BehaviourArgs names the module, its helpers and the checkpoint whose
// RoPE table and RMSNorm are compared with transformers.
type BehaviourArgs struct {
	WeightsModule string `json:"weights_module"`
	HelpersModule string `json:"helpers_module"`
	ModelDir      string `json:"model_dir"`
	MaxSeq        int    `json:"max_seq"`
	// ConfigFunction is the module function whose config the RoPE table
	// is asked for (a quantized module's llama31_8b_config); absent for
	// LlamaConfig().
	ConfigFunction string `json:"config_function,omitempty"`
}

// BehaviourFacts are what the weights module and its helpers compute, next
// to what transformers computes for the same config. The arrays travel as
// one float32 payload, split by Arrays.
type BehaviourFacts struct {
	Rope          RopeFacts   `json:"rope"`
	HelpersModule *string     `json:"helpers_module"`
	HelpersFound  bool        `json:"helpers_found"`
	HelpersRaised string      `json:"helpers_raised,omitempty"`
	Norms         []NormFacts `json:"norms"`
	Arrays        []ArraySpec `json:"arrays"`
}

// RopeFacts describes the module's generate_rope_lut call.
type RopeFacts struct {
	SeqLen   int     `json:"seq_len"`
	HeadDim  int     `json:"head_dim"`
	RopeType string  `json:"rope_type"` // transformers' rope type for the checkpoint
	Defined  bool    `json:"defined"`
	Raised   string  `json:"raised,omitempty"`
	Type     string  `json:"type,omitempty"`
	DType    string  `json:"dtype,omitempty"`
	Shape    []int64 `json:"shape,omitempty"`
}

// NormFacts describes one helper run on the RMSNorm probe.
type NormFacts struct {
	Helper  string `json:"helper"` // rms_norm or qk_norm_per_head
	Defined bool   `json:"defined"`
	Width   int    `json:"width"`  // the normalised axis
	Groups  int    `json:"groups"` // heads for qk_norm_per_head, else 1
	// Eps is transformers' rms_norm_eps for the reference (absent when the
	// helper is not defined).
	Eps float64 `json:"eps,omitempty"`
	// EpsArgument is the eps passed to the helper, null for its own default
	// (as production calls it); absent unless the helper ran.
	EpsArgument *float64 `json:"eps_argument,omitempty" py:"null"`
	Raised      string   `json:"raised,omitempty"`
}

// ArraySpec names one part of the float32 payload.
type ArraySpec struct {
	Name  string  `json:"name"`
	Shape []int64 `json:"shape"`
}
