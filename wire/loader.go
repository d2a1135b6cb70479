package wire

// ModuleArgs names a weights module and the checkpoint it loads (gate 1
// and the config facts of gate 3).
type ModuleArgs struct {
	WeightsModule string `json:"weights_module"` // "" for none (config_facts only)
	ModelDir      string `json:"model_dir"`
}

// LoaderFactsResult is what the module's load_weights returned, and how
// its lm_head relates to its embed_table (judged in gate 3).
type LoaderFactsResult struct {
	LoaderFacts
	Tie *TieFacts `json:"tie"`
}

// LoaderFacts are LlamaWeights' arrays as loaded: the whole-model ones by
// field name, and each layer's (null when the weights have no layers).
type LoaderFacts struct {
	Globals map[string]ArrayFacts   `json:"globals"`
	Layers  []map[string]ArrayFacts `json:"layers" py:"null"`
}

// ArrayFacts is what the worker reports of one array the loader returned.
type ArrayFacts struct {
	Type    string        `json:"type"`            // "ndarray", or the Python type name of something else
	Shape   []int64       `json:"shape,omitempty"` // shape, dtype and samples: ndarrays only
	DType   string        `json:"dtype,omitempty"`
	Samples []ArraySample `json:"samples,omitempty"`
}

// ArraySample is one loaded value: bf16 arrays give the 16-bit pattern,
// others a number.
type ArraySample struct {
	Index []int64 `json:"index"`
	Bits  *uint16 `json:"bits,omitempty"`
	Value any     `json:"value,omitempty"`
}

// TieFacts is how the loaded lm_head relates to embed_table.
type TieFacts struct {
	SameObject bool  `json:"same_object"` // lm_head is embed_table
	Elements   int64 `json:"elements"`
	// Differing counts elements that differ (bf16 by bit pattern); null
	// when the shapes differ.
	Differing *int64 `json:"differing"`
}
