package wire

import "phase0/read/model"

// BaselineArgs asks for the canonical-prompt prefill through the reference
// HfRunner; reference_plan and prompt_tokens take the same arguments.
type BaselineArgs struct {
	ModelDir    string `json:"model_dir"`
	ModelID     string `json:"model_id"`
	LLMSDir     string `json:"llms_dir,omitempty"`
	PromptStyle string `json:"prompt_style,omitempty"`
	Prompt      string `json:"prompt,omitempty"`
	// Config is the checkpoint's config as read/model extracted it, which
	// the worker takes as open-ended fields.
	Config        *model.Config `json:"config"`
	WeightsModule string        `json:"weights_module,omitempty"`
	MaxSeq        int           `json:"max_seq"`
	DecodeN       int           `json:"decode_n"`
	// Quant, for a quantized folder's key, asks for quantized gate 2 in
	// the same op: the folder's dequantized projections patched into the
	// model the baseline loaded, prefilled again.
	Quant *QuantE2EArgs `json:"quant,omitempty"`
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
	Top            []TopToken    `json:"top"`
	Decode         *Decode       `json:"decode"`
	Calibration    *PassageFacts `json:"calibration"`
	SecondsCalib   float64       `json:"seconds_calibration"`
	SecondsLoad    float64       `json:"seconds_load"`
	SecondsPrefill float64       `json:"seconds_prefill"`
	SecondsDecode  *float64      `json:"seconds_decode"`
	Torch          string        `json:"torch_version"`
	Transformers   string        `json:"transformers_version"`
	// Quant is quantized gate 2's facts, when the args asked for them.
	Quant *QuantE2EFacts `json:"quant,omitempty"`
}

// SpecialIDs are the tokenizer's special ids (every eos id the tokenizer,
// config.json and generation_config.json name).
type SpecialIDs struct {
	BOS *int  `json:"bos"`
	EOS []int `json:"eos"`
	Pad *int  `json:"pad"`
	Unk *int  `json:"unk"`
}

// Token is a vocabulary entry the runner described (decoded text and kind).
type Token struct {
	ID          int    `json:"id"`
	Text        string `json:"text"`
	Special     bool   `json:"special"`
	Placeholder bool   `json:"placeholder"`
}

// TopToken is one of the top logits' tokens.
type TopToken struct {
	Token
	Vocab       *string  `json:"token"` // the vocabulary string; null outside the tokenizer
	Logit       *float64 `json:"logit"` // null when not finite
	InTokenizer bool     `json:"in_tokenizer"`
}

// Decode is the optional greedy continuation.
type Decode struct {
	IDs  []int  `json:"ids"`
	Text string `json:"text"`
}

// PassageFacts are the baseline's measurements on the calibration passage
// (phase0_shim/calibration.py holds the passage).
type PassageFacts struct {
	Passage    string     `json:"passage"`
	Tokens     []int      `json:"tokens"`
	NLL        []*float64 `json:"nll"`
	LogitsSize int        `json:"logits_size"`
}

// PromptTokens is the canonical prompt gate 2 would prefill and its length
// in the model's tokens: a fact Go judges against max_seq before any model
// is loaded.
type PromptTokens struct {
	Prompt string `json:"prompt"`
	Tokens int    `json:"tokens"`
}

// PromptSet is the prompts a recording covers, and the runner whose tree
// chose them.
type PromptSet struct {
	Runner          string   `json:"runner"`
	RunnerPath      string   `json:"runner_path"`
	PromptsFile     string   `json:"prompts_file"`
	PromptStyle     string   `json:"prompt_style"`
	Prompts         []string `json:"prompts"`
	CanonicalPrompt int      `json:"canonical_prompt"`
}

// ReferencePlan is what a recording is keyed on.
type ReferencePlan struct {
	PromptSet
	TokenizerSHA256 string `json:"tokenizer_sha256"`
	Torch           string `json:"torch_version"`
	Transformers    string `json:"transformers_version"`
}

// RecordReferenceArgs asks for a recording into OutDir; Meta is written
// into its reference.json as given.
type RecordReferenceArgs struct {
	BaselineArgs
	Steps  int            `json:"steps"`
	TopK   int            `json:"top_k"`
	Dtype  string         `json:"dtype"`
	OutDir string         `json:"out_dir"`
	Meta   map[string]any `json:"meta" py:"null"`
}
