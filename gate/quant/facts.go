// Package quant judges a quantized deployment's weights (gate 1 for a
// quantized folder): the folder's own loader's tensors against the bf16
// reference checkpoint, one metric at a time, with limits that come from
// the format (one file per format behind Format). Python reports sums;
// every metric and every verdict is computed here.
package quant

// Confusion names, as the worker reports them.
const (
	ConfTransposed = "transposed"
	ConfPartner    = "partner"
	ConfRowPairs   = "row_pairs_swapped"
	// ConfGroupOffset is the tensors compared with each group's mean
	// removed from both: a match there alone is one offset per group.
	ConfGroupOffset = "group_offset"
)
