package preflight

import (
	"iter"
	"runtime"

	"phase0/read/safetensors"
)

// CheckpointMemory estimates the Python worker's peak memory for the
// checkpoint: the larger of the generated loader's arrays and the HF bf16
// model, which never coexist (see EstimateMemory).
func CheckpointMemory(inv *safetensors.Inventory) Memory {
	return EstimateMemory(inventoryShapes(inv), runtime.NumCPU())
}

// inventoryShapes yields every checkpoint tensor's name and shape.
func inventoryShapes(inv *safetensors.Inventory) iter.Seq2[string, []int64] {
	return func(yield func(string, []int64) bool) {
		for _, t := range inv.Tensors() {
			if !yield(t.Name, t.Shape) {
				return
			}
		}
	}
}
