package wire

// QuantArgs name a quantized folder's weights module, what its loader
// reads (the bundle, or the reference it quantizes on load), the bf16
// reference checkpoint, its layer count and the format's error bound.
type QuantArgs struct {
	WeightsModule string     `json:"weights_module"`
	Source        string     `json:"source"`
	ReferenceDir  string     `json:"reference_dir"`
	NLayers       int        `json:"n_layers"`
	Bound         QuantBound `json:"bound"`
	// CandidateDirs are other cached checkpoints the bundle might come
	// from (the folder's other references, the card's base_model): layer
	// 0's projections are compared with each too, so the numbers can name
	// the source.
	CandidateDirs []string `json:"candidate_dirs,omitempty"`
	// Keep leaves the dequantized projections (and head) in the worker for
	// quantized gate 2 in the same session: the folder's loader runs once.
	Keep bool `json:"keep,omitempty"`
	// Family is a deployed family's name (read/tensornames' Families:
	// "gemma3", "phi3"): the worker reads the reference through its
	// prefixes, fused tensors and conventions. Absent for the supported
	// families.
	Family string `json:"family,omitempty"`
	// EmbedScale is sqrt(hidden) for a family whose bundle stores the
	// embedding scaled.
	EmbedScale float64 `json:"embed_scale,omitempty"`
}

// QuantBound is a format's own per-element error bound, applied to each
// group of Group input elements: step = (max - min) / levels (affine) or
// absmax / levels (symmetric); an element is beyond the bound when its
// error exceeds step / 2 + slack * absmax (the bf16 rounding of the scale,
// the offset and the dequantized value).
type QuantBound struct {
	Group     int     `json:"group"`
	Levels    int     `json:"levels"`
	Symmetric bool    `json:"symmetric"`
	Slack     float64 `json:"slack"`
	// BlockRows x BlockCols is the format's storage block ([out, in]),
	// when it has one (Q4NX: 32 x 256): the worker then says which blocks
	// hold the errors beyond the bound and whether they hold another
	// block's values (blocks out of order).
	BlockRows int `json:"block_rows,omitempty"`
	BlockCols int `json:"block_cols,omitempty"`
}

// QuantFactsResult is quant_facts' answer for one quantized folder: every
// tensor its own loader returned, against the source checkpoint.
type QuantFactsResult struct {
	Loader        string              `json:"loader"`
	LayersLoaded  int                 `json:"layers_loaded"`
	Tensors       []QuantTensor       `json:"tensors"`
	ImportFailure *QuantImportFailure `json:"import_failure"`
	// Candidates are layer 0's projections against other cached
	// checkpoints the bundle might come from (QuantArgs.CandidateDirs).
	Candidates []QuantCandidate `json:"candidates,omitempty"`
	// MissingKey is the key the loader raised KeyError on, when it stopped
	// there (a tensor its source does not hold): Tensors are those it
	// returned before.
	MissingKey string `json:"missing_key,omitempty"`
	// LoaderFallback says why Loader is the module's per-layer class and
	// not its load_*weights* function (the function could not import what
	// it imports); empty when the function ran.
	LoaderFallback string `json:"loader_fallback,omitempty"`
}

// QuantTensor is what the worker reports for one tensor the loader
// returned. Layer -1 is a whole-model tensor (embed_table, final_norm,
// lm_head).
type QuantTensor struct {
	Layer          int                   `json:"layer"`
	Field          string                `json:"field"` // LlamaWeights' name: wq … w_down, attn_norm …
	Reference      string                `json:"reference"`
	Shape          []int                 `json:"shape"`
	ReferenceShape []int                 `json:"reference_shape"`
	Stats          *QuantStats           `json:"stats,omitempty"`
	Confusions     map[string]QuantStats `json:"confusions,omitempty"` // transposed, partner, row_pairs_swapped, group_offset
	Differing      *int64                `json:"differing,omitempty"`  // bf16 elements whose bits differ (kept tensors)
	Blocks         *QuantBlocks          `json:"blocks,omitempty"`     // where the errors beyond the bound lie (a blocked format)
	Zeroed         *QuantZeroed          `json:"zeroed,omitempty"`     // groups the loader returned all zero where the reference's are not
	Problem        string                `json:"problem,omitempty"`
	// Convention is the family convention (one_plus, embed_scale) the
	// reference was brought to first; Differing then counts elements more
	// than one bf16 step off, and the confusions are the mistaken ways of
	// storing it.
	Convention string `json:"convention,omitempty"`
}

// QuantStats are sufficient statistics of x (the loader's tensor) against
// y (the reference's), summed in float64 by the worker.
type QuantStats struct {
	N           int64   `json:"n"`
	SumX        float64 `json:"sum_x"`
	SumY        float64 `json:"sum_y"`
	SumXX       float64 `json:"sum_xx"`
	SumYY       float64 `json:"sum_yy"`
	SumXY       float64 `json:"sum_xy"`
	SumDD       float64 `json:"sum_dd"`
	MaxAbsDiff  float64 `json:"max_abs_diff"`
	BeyondBound int64   `json:"beyond_bound"`
	// WorstExcess is the largest error beyond the bound in units of the
	// element's own bound (0 when none is beyond it).
	WorstExcess float64 `json:"worst_excess"`
}

// QuantBlocks is where a projection's errors beyond the bound lie, by the
// format's storage block: how many of its blocks hold any, how many of
// those were compared with every block of the reference, and how many of
// those match another block (its values stored in the wrong place).
type QuantBlocks struct {
	Rows    int `json:"rows"`
	Cols    int `json:"cols"`
	Total   int `json:"total"`
	Beyond  int `json:"beyond"`
	Checked int `json:"checked"`
	Moved   int `json:"moved"`
}

// QuantZeroed is where a projection's loader returned all zeros for a
// bound group (Group input elements of one output row) whose reference
// values are not all zero: how many such groups, how many output rows are
// zero in every group, and the first and last output row holding one.
type QuantZeroed struct {
	Groups   int64 `json:"groups"`
	Rows     int   `json:"rows"`
	FirstRow int   `json:"first_row"`
	LastRow  int   `json:"last_row"`
}

// QuantImportFailure says why the weights module could not be imported: a
// module it imports is missing, and which of the folders it put on
// sys.path do not exist.
type QuantImportFailure struct {
	Module       string   `json:"module"`
	MissingPaths []string `json:"missing_paths"`
	Message      string   `json:"message"`
}

// QuantCandidate is layer 0's projections (Fields) against one checkpoint.
type QuantCandidate struct {
	ReferenceDir string       `json:"reference_dir"`
	Fields       []string     `json:"fields"`
	Stats        []QuantStats `json:"stats"`
}

// QuantModuleArgs names a quantized weights module.
type QuantModuleArgs struct {
	WeightsModule string `json:"weights_module"`
}

// QuantModuleFacts are a quantized module's *_config() functions' values
// (name → its config), the ones that raised, and whether it defines the
// behaviour gate 3 judges.
type QuantModuleFacts struct {
	Configs map[string]GeneratedFacts `json:"configs"`
	Raised  map[string]string         `json:"raised"`
	RopeLUT bool                      `json:"rope_lut"`
	// RopeModule is the module whose generate_rope_lut the folder uses when
	// its own module has none: the one its config class comes from.
	RopeModule    string              `json:"rope_module"`
	RMSNorm       bool                `json:"rms_norm"`
	ImportFailure *QuantImportFailure `json:"import_failure"`
}

// QuantE2EArgs name the quantized folder's loader for quantized gate 2,
// whose dequantized projections are patched into the baseline's model
// after the bf16 prefills.
type QuantE2EArgs struct {
	WeightsModule string `json:"weights_module"`
	Source        string `json:"source"`
	ReferenceDir  string `json:"reference_dir"`
	NLayers       int    `json:"n_layers"`
	// Rule is the format's quantization rule, for the twin (the
	// reference's own projections through it and back).
	Rule QuantBound `json:"rule"`
}

// QuantE2EOnlyArgs ask for quantized gate 2 alone, when the bf16 gate 2
// is reused from its record: the reference model and the canonical
// prompt's token ids as recorded.
type QuantE2EOnlyArgs struct {
	QuantE2EArgs
	ModelDir     string `json:"model_dir"`
	PromptTokens []int  `json:"prompt_tokens"`
}

// QuantE2EFacts are the worker's answer for quantized gate 2: the
// reference's transformers model prefilled as loaded (bf16) and again with
// every projection swapped for the folder's dequantized one, on the
// canonical prompt and on the calibration passage.
type QuantE2EFacts struct {
	Loader               string    `json:"loader"`
	Patched              int       `json:"patched"`
	HeadPatched          bool      `json:"head_patched"`
	FromGate1            bool      `json:"from_gate_1"`
	ReferenceTop         []int     `json:"reference_top"`
	ReferenceTopLogprobs []float64 `json:"reference_top_logprobs"`
	QuantizedTop         []int     `json:"quantized_top"`
	QuantizedTopLogprobs []float64 `json:"quantized_top_logprobs"`
	KLPrompt             float64   `json:"kl_prompt"`
	PassageTokens        int       `json:"passage_tokens"`
	KLPassage            []float64 `json:"kl_passage"`
	ReferenceNLL         []float64 `json:"reference_nll"`
	QuantizedNLL         []float64 `json:"quantized_nll"`
	ReferenceArgmax      []int     `json:"reference_argmax"`
	QuantizedArgmax      []int     `json:"quantized_argmax"`
	// DPPassage is, per passage position, the drop of the reference's
	// top-1 probability: p_bf16(top-1) - p_quantized(the same token).
	DPPassage []float64 `json:"dp_passage"`
	// HiddenCosine is, per decoder layer, the mean over the prompt's tokens
	// of the cosine of the layer's output with the reference's.
	HiddenCosine []float64 `json:"hidden_cosine"`
	// The twin: the reference's own projections through the format's rule
	// and back, prefilled in the same model before the folder's tensors.
	TwinRule         string    `json:"twin_rule"`
	TwinError        string    `json:"twin_error"` // why no twin was built ("" when it was)
	TwinQuantized    int       `json:"twin_quantized"`
	TwinHead         bool      `json:"twin_head"`
	TwinTop          []int     `json:"twin_top"`
	TwinTopLogprobs  []float64 `json:"twin_top_logprobs"`
	KLPromptTwin     float64   `json:"kl_prompt_twin"`
	KLPassageTwin    []float64 `json:"kl_passage_twin"`
	TwinNLL          []float64 `json:"twin_nll"`
	TwinArgmax       []int     `json:"twin_argmax"`
	DPPassageTwin    []float64 `json:"dp_passage_twin"`
	HiddenCosineTwin []float64 `json:"hidden_cosine_twin"`
}

// QuantFamilyArgs names a deployed family's quantized module (Gemma 3,
// Phi-3), its family, the reference and what the module reads its RoPE
// factor tables from (the bundle).
type QuantFamilyArgs struct {
	WeightsModule string `json:"weights_module"`
	Family        string `json:"family"`
	ReferenceDir  string `json:"reference_dir"`
	Source        string `json:"source"`
}

// QuantFamilyFacts are a deployed family's module as the worker evaluates
// it: its numeric top-level constants, which layers it makes global, and
// its RoPE tables against transformers'.
type QuantFamilyFacts struct {
	// Constants are the module's numeric top-level constants as Python
	// evaluates them (EMBED_SCALE = float(np.sqrt(D)) included).
	Constants map[string]float64 `json:"constants"`
	// GlobalLayers are the layers the module's is_global_layer makes
	// global; null when it defines none.
	GlobalLayers []int            `json:"global_layers" py:"null"`
	Rope         []QuantRopeTable `json:"rope"`
	RopeError    string           `json:"rope_error"`
	// FactorRel is, for Phi-3, the largest relative difference of the
	// LongRoPE factor tables the module reads (from the bundle) against
	// config.json's, and FactorRelBF the same after rounding config.json's
	// to bf16 (0 when the bundle's are its bf16 rounding); -1 when the
	// module reads none.
	FactorRel   float64             `json:"factor_rel_diff"`
	FactorRelBF float64             `json:"factor_rel_diff_bf16"`
	Import      *QuantImportFailure `json:"import_failure"`
}

// QuantRopeTable is one of the module's RoPE tables against transformers'
// for the same positions: Label names the table (a layer and its kind, a
// LongRoPE range).
type QuantRopeTable struct {
	Label     string  `json:"label"`
	Positions []int   `json:"positions"`
	MaxDiff   float64 `json:"max_abs_diff"`
	// OtherDiff is the same table against transformers' other kind (Gemma:
	// the global table for a local layer); -1 when there is no other kind.
	OtherDiff float64 `json:"other_max_abs_diff"`
}
