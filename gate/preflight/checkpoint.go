package preflight

import (
	"iter"
	"runtime"

	"phase0/read/safetensors"
	"phase0/read/tensornames"
)

// CheckpointMemory estimates the Python worker's peak memory for the
// checkpoint: the larger of the generated loader's arrays and the HF bf16
// model, which never coexist (see EstimateMemory).
func CheckpointMemory(inv *safetensors.Inventory) Memory {
	return EstimateMemory(inventoryShapes(inv), runtime.NumCPU())
}

// QuantizedMemory is CheckpointMemory with a quantized key's stages (see
// WithQuantized): family is the deployed family the reference is read as
// ("" for the skill's), whose vocabulary says whether the bundle brings a
// quantized head of its own that the folder's loader dequantizes (Gemma 3).
func QuantizedMemory(inv *safetensors.Inventory, family string) Memory {
	f, ok := tensornames.AdditionsOf(family)
	return CheckpointMemory(inv).WithQuantized(ok && f.QuantizedHead)
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
