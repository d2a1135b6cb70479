// Package quant judges a quantized deployment's weights (gate 1 for a
// quantized folder): the folder's own loader's tensors against the bf16
// reference checkpoint, one metric at a time, with limits that come from
// the format (one file per format behind Format). Python reports sums;
// every metric and every verdict is computed here.
package quant

// Bound is a format's own per-element error bound, as the worker applies it
// per group of Group input elements: half a quantization step plus Slack
// times the group's largest magnitude (the bf16 rounding of the scale, the
// offset and the dequantized value).
type Bound struct {
	Group     int     `json:"group"`
	Levels    int     `json:"levels"`
	Symmetric bool    `json:"symmetric"`
	Slack     float64 `json:"slack"`
	// BlockRows × BlockCols is the format's storage block ([out, in]),
	// when it has one (Q4NX: 32 × 256): the worker then says which blocks
	// hold the errors beyond the bound and whether they hold another
	// block's values (blocks out of order).
	BlockRows int `json:"block_rows,omitempty"`
	BlockCols int `json:"block_cols,omitempty"`
}

// Stats are sufficient statistics of x (the loader's tensor) against y
// (the reference's), summed in float64 by the worker.
type Stats struct {
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

// Blocks is where a projection's errors beyond the bound lie, by the
// format's storage block: how many of its blocks hold any, how many of
// those were compared with every block of the reference, and how many of
// those match another block (its values stored in the wrong place).
type Blocks struct {
	Rows    int `json:"rows"`
	Cols    int `json:"cols"`
	Total   int `json:"total"`
	Beyond  int `json:"beyond"`
	Checked int `json:"checked"`
	Moved   int `json:"moved"`
}

// Tensor is what the worker reports for one tensor the loader returned.
// Layer -1 is a whole-model tensor (embed_table, final_norm, lm_head).
type Tensor struct {
	Layer          int              `json:"layer"`
	Field          string           `json:"field"` // LlamaWeights' name: wq … w_down, attn_norm …
	Reference      string           `json:"reference"`
	Shape          []int            `json:"shape"`
	ReferenceShape []int            `json:"reference_shape"`
	Stats          *Stats           `json:"stats,omitempty"`
	Confusions     map[string]Stats `json:"confusions,omitempty"` // transposed, partner, row_pairs_swapped
	Differing      *int64           `json:"differing,omitempty"`  // bf16 elements whose bits differ (kept tensors)
	Blocks         *Blocks          `json:"blocks,omitempty"`     // where the errors beyond the bound lie (a blocked format)
	Problem        string           `json:"problem,omitempty"`
	// Convention is the family convention (tensornames.Convention) the
	// reference was brought to first; Differing then counts elements more
	// than one bf16 step off, and the confusions are the mistaken ways of
	// storing it (conventions.go).
	Convention string `json:"convention,omitempty"`
}

// ImportFailure says why the weights module could not be imported: a
// module it imports is missing, and which of the folders it put on
// sys.path do not exist.
type ImportFailure struct {
	Module       string   `json:"module"`
	MissingPaths []string `json:"missing_paths"`
	Message      string   `json:"message"`
}

// Facts are the worker's answer for one quantized folder.
type Facts struct {
	Loader        string         `json:"loader"`
	LayersLoaded  int            `json:"layers_loaded"`
	Tensors       []Tensor       `json:"tensors"`
	ImportFailure *ImportFailure `json:"import_failure"`
	// Candidates are layer 0's projections against other cached
	// checkpoints the bundle might come from (QuantArgs.CandidateDirs).
	Candidates []Candidate `json:"candidates,omitempty"`
}

// Candidate is layer 0's projections (Fields) against one checkpoint.
type Candidate struct {
	ReferenceDir string   `json:"reference_dir"`
	Fields       []string `json:"fields"`
	Stats        []Stats  `json:"stats"`
}

// Confusion names, as the worker reports them.
const (
	ConfTransposed = "transposed"
	ConfPartner    = "partner"
	ConfRowPairs   = "row_pairs_swapped"
	// ConfGroupOffset is the tensors compared with each group's mean
	// removed from both: a match there alone is one offset per group.
	ConfGroupOffset = "group_offset"
)
