package preflight

import (
	"fmt"
	"iter"
	"strings"
)

// The memory estimate's constants were measured with /usr/bin/time -v (the
// worker child's maximum resident set) and a 0.5 s sampler of its
// /proc/<pid>/status, for `phase0 run --fresh --reference-steps 0` on the
// 2-core test machine (torch 2.15, transformers 5.24): a Llama-3.2-3B-shaped
// checkpoint (3.21 B parameters, 6.43 GB bf16) peaked at 7,221,208 KiB and
// SmolLM2-135M-Instruct at 1,168,256 KiB, both in the HF model's stage; the
// estimate says 6.95 GiB (+0.9%) and 1.17 GiB (+5%).
const (
	// numpyRuntime is the worker while the generated loader runs: the Go
	// child, libpython, NumPy, ml_dtypes and phase0's shim (torch is not
	// imported yet). Measured: 222 MiB right after the 3B loader returned.
	numpyRuntime = 256 << 20
	// torchRuntime is everything the HF stage holds beside the weights and
	// the logits: torch's and transformers' libraries (~0.4 GB of mapped
	// code), their heaps, the tokenizer, the KV cache and hidden states of
	// a 64-token forward. Measured 846 MiB (3B) and 854 MiB (135M); the
	// rest is room for a larger tokenizer than the stand-in the 3B
	// measurement used (SmolLM2's).
	torchRuntime = 912 << 20
	// forwardTokens bounds the longest forward the worker runs: the
	// calibration passage (~20 tokens), a canonical or reference prompt
	// (a dozen) plus the 32 recorded steps, which decode one at a time.
	forwardTokens = 64
	// logitBytes per token and vocabulary entry in that forward: the
	// model's bf16 logits for every position (2), their float32 copy (4)
	// and its log-softmax (4), alive together in the calibration passage.
	logitBytes = 2 + 4 + 4
	// loaderMaxThreads caps the threads a generated loader may read layers
	// with (one per CPU, at most 8: beyond that memory bandwidth is the
	// limit). A loader that reads with fewer needs less: an upper bound.
	loaderMaxThreads = 8
	// bf16Bytes: both the loader's arrays and the HF reference are bf16.
	bf16Bytes = 2
)

// Memory is the Python worker's estimated peak memory (resident set) for one
// model, term by term. The worker runs phase0's stages one after another in
// one process: the generated loader's NumPy arrays (gate 1), then the HF
// bf16 model (gate 2 and the reference). loader_facts drops its arrays
// before it returns, so the two never coexist: the peak is the larger of
// the two stages, never their sum.
type Memory struct {
	Parameters int64 // every element of every checkpoint tensor
	// Weights is every parameter in bf16: the loader's arrays (a tied
	// lm_head is the embedding array itself) and, in the next stage, the
	// HF model, whose bf16 tensors transformers maps from the checkpoint
	// (or converts to, for another stored dtype).
	Weights int64
	// LoaderScratch is what the loader holds beside its results: per
	// loading thread, the bytes read of the projection in flight and its
	// transpose's staging, each up to the largest per-layer matrix. A
	// single-threaded loader (np.ascontiguousarray(t.T)) holds one.
	LoaderScratch int64
	LoaderThreads int
	// Logits is the longest forward's logits (forwardTokens × vocabulary ×
	// logitBytes).
	Logits int64
	Loader int64 // Weights + LoaderScratch + numpyRuntime
	HF     int64 // Weights + Logits + torchRuntime
	// Quantized is a quantized key's stages (WithQuantized): the folder's
	// own loader returns the whole model dequantized to bf16 (upstream's
	// load_*_weights), and quantized gate 2 holds it as the reference
	// model's projections: Weights × quantLoaderFactor + Logits +
	// torchRuntime. 0 for a bf16 run.
	Quantized int64
	Peak      int64 // max(Loader, HF, Quantized)
}

// quantLoaderFactor is the anonymous memory of a quantized folder's stages
// per bf16 weight byte, beside the torch runtime and the logits: measured
// 1.16 (llama32_3b_q4nx) and 1.29 (qwen25_3b_q4, which reads the bf16
// checkpoint itself) at 3B through upstream's own modules
// (docs/BENCHMARKS.md); 1.30 puts both estimates 1–10 % over.
const quantLoaderFactor = 1.30

// WithQuantized adds a quantized key's stages to the estimate.
func (m Memory) WithQuantized() Memory {
	m.Quantized = int64(float64(m.Weights)*quantLoaderFactor) + m.Logits + torchRuntime
	m.Peak = max(m.Peak, m.Quantized)
	return m
}

// EstimateMemory sizes the worker's peak from the checkpoint's tensor shapes
// (name → shape, as the headers or a config imply them) and the CPUs the
// loader may use.
func EstimateMemory(tensors iter.Seq2[string, []int64], cpus int) Memory {
	var m Memory
	var largest, vocab int64
	layers := map[string]bool{}
	for name, shape := range tensors {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		m.Parameters += n
		// The loader transposes the per-layer matrices; the embeddings and
		// lm_head keep the HF layout and are read straight into their array.
		if rest, ok := strings.CutPrefix(name, "model.layers."); ok && len(shape) == 2 {
			largest = max(largest, n)
			layer, _, _ := strings.Cut(rest, ".")
			layers[layer] = true
		}
		if name == "model.embed_tokens.weight" && len(shape) == 2 {
			vocab = shape[0]
		}
	}
	m.Weights = m.Parameters * bf16Bytes
	m.LoaderThreads = max(1, min(cpus, loaderMaxThreads, len(layers)))
	m.LoaderScratch = int64(m.LoaderThreads) * 2 * largest * bf16Bytes
	m.Logits = forwardTokens * vocab * logitBytes
	m.Loader = m.Weights + m.LoaderScratch + numpyRuntime
	m.HF = m.Weights + m.Logits + torchRuntime
	m.Peak = max(m.Loader, m.HF)
	return m
}

// Describe is the estimate in one line: the peak, and which stage sets it.
func (m Memory) Describe() string {
	stage := fmt.Sprintf("in the HF bf16 model's stage (the loader's, %.1f GiB, frees its arrays first)", gib(m.Loader))
	if m.Quantized == m.Peak && m.Quantized > 0 {
		stage = fmt.Sprintf("in the quantized stages: the folder's loader returns the model dequantized, which quantized gate 2 holds as the reference model's projections (the HF bf16 model alone: %.1f GiB)", gib(m.HF))
	} else if m.Loader > m.HF {
		stage = fmt.Sprintf("in the generated loader's stage, %d thread(s) (the HF bf16 model's, %.1f GiB, loads after the arrays are freed)", m.LoaderThreads, gib(m.HF))
	}
	return fmt.Sprintf("%.2f B parameters need ~%.1f GiB at peak, %s", float64(m.Parameters)/1e9, gib(m.Peak), stage)
}
