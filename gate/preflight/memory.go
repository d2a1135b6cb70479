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
	// Quantized is a quantized key's stages (WithQuantized), measured as
	// the worker's anonymous memory (the bf16 model's safetensors pages
	// are mmap-ed, file-backed and reclaimable). Gate 1 keeps every
	// projection the folder's loader dequantizes and its head, in bf16,
	// for quantized gate 2, while the loader and the statistics hold a
	// float32 copy of the head's size (QuantizedKeep); its loader may
	// peak higher dequantizing a large head whole (QuantizedGate1, the
	// larger of the two). Gate 2 patches the kept tensors in, then makes
	// the twin (each reference projection through the format's rule) one
	// projection at a time in place of the bundle's: one copy of the
	// projections in bf16, plus a head of its own (an untied reference's,
	// or the bundle's quantized one, Gemma 3's), the logits and torch's
	// runtime (QuantizedGate2). Quantized is the larger; all 0 for a bf16 run.
	Quantized      int64
	QuantizedGate1 int64
	QuantizedKeep  int64
	QuantizedGate2 int64
	// Projections is every per-layer matrix of the text model (elements).
	Projections int64
	// Head is the output head's elements: lm_head's when the checkpoint
	// has one (untied), else the embedding's (a tied head).
	Head   int64
	Untied bool  // the checkpoint stores lm_head.weight
	Peak   int64 // max(Loader, HF, Quantized)
}

// quantDequantBytes is what a folder's loader holds per element of the
// largest tensor it dequantizes whole: upstream's NumPy dequantization
// widens the 4-bit codes, repeats the scales and mins and multiplies in
// float32, then copies the result transposed, beside the embedding widened
// to float32 (gemma3_4b_q4nx's embed_norm_lmhead). Measured: the loader
// alone peaks at 13.25 GiB at the real-shaped Gemma 3 4B's 262208 × 2560
// head, ~20 bytes an element.
const quantDequantBytes = 20

// quantKeepHeadBytes is what quantized gate 1 holds per head element
// beside the tensors it keeps: a float32 copy's worth (the loader's and
// the statistics' work on the head or the tied embedding). Measured at the
// real-shaped Phi-4-mini: gate 1 peaks at 9.18 GiB of RssAnon, the kept
// projections and head in bf16 being 7.14 GiB.
const quantKeepHeadBytes = 4

// WithQuantized adds a quantized key's stages to the estimate: the larger
// of quantized gate 1 keeping the dequantized projections and head (and,
// when it does: dequantHead, a family storing its own quantized head, or
// an untied reference, its loader dequantizing the head whole) and
// quantized gate 2 holding one copy of the projections (the bundle's,
// then the twin's in their place). Measured by make bench's stages child
// (the worker's RssAnon every 50 ms; docs/BENCHMARKS.md): the real-shaped
// Phi-4-mini peaks at 9.20 GiB and Gemma 3 4B at 12.23 GiB, both in gate 1,
// which runs the loader under the worker's NumPy allocator and its arena
// (never past the resident peak the worker already reached).
func (m Memory) WithQuantized(dequantHead bool) Memory {
	var heads int64 // tied and taken from the embedding: no head of its own
	if m.Untied || dequantHead {
		heads = 1 // the bundle's own (kept), then the twin's in its place when untied
	}
	m.QuantizedGate2 = (m.Projections+heads*m.Head)*bf16Bytes + m.Logits + torchRuntime
	m.QuantizedKeep = (m.Projections+m.Head)*bf16Bytes + m.Head*quantKeepHeadBytes + numpyRuntime
	m.QuantizedGate1 = m.QuantizedKeep
	if dequantHead || m.Untied {
		m.QuantizedGate1 = max(m.QuantizedKeep, m.Head*quantDequantBytes+torchRuntime)
	}
	m.Quantized = max(m.QuantizedGate1, m.QuantizedGate2)
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
		// A deployed family's text model may sit under a prefix (Gemma 3's
		// language_model.model.); a vision tower's layers are not the LLM's.
		if _, rest, ok := strings.Cut(name, "model.layers."); ok && len(shape) == 2 && !strings.Contains(name, "vision") {
			largest = max(largest, n)
			layer, _, _ := strings.Cut(rest, ".")
			layers[layer] = true
			m.Projections += n
		}
		if len(shape) == 2 && (strings.HasSuffix(name, "model.embed_tokens.weight") || strings.HasSuffix(name, "language_model.embed_tokens.weight")) {
			vocab = shape[0]
			if !m.Untied {
				m.Head = n
			}
		}
		if name == "lm_head.weight" && len(shape) == 2 {
			m.Untied, m.Head = true, n
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
	quantized := m.Quantized == m.Peak && m.Quantized > 0
	var stage string
	switch {
	case quantized && m.QuantizedGate1 > m.QuantizedGate2 && m.QuantizedGate1 > m.QuantizedKeep:
		stage = fmt.Sprintf("in the quantized stages: the folder's loader dequantizes the %.2f B-element head whole in float32 (quantized gate 2, holding one copy of the projections: %.1f GiB; the HF bf16 model alone: %.1f GiB)", float64(m.Head)/1e9, gib(m.QuantizedGate2), gib(m.HF))
	case quantized && m.QuantizedGate1 > m.QuantizedGate2:
		stage = fmt.Sprintf("in the quantized stages: gate 1 keeps the folder's dequantized projections and head for gate 2 beside the head's float32 work (quantized gate 2, holding one copy of the projections: %.1f GiB; the HF bf16 model alone: %.1f GiB)", gib(m.QuantizedGate2), gib(m.HF))
	case quantized:
		stage = fmt.Sprintf("in the quantized stages: quantized gate 2 holds one copy of the projections, the bundle's, then its twin's in their place (the HF bf16 model alone: %.1f GiB)", gib(m.HF))
	case m.Loader > m.HF:
		stage = fmt.Sprintf("in the generated loader's stage, %d thread(s) (the HF bf16 model's, %.1f GiB, loads after the arrays are freed)", m.LoaderThreads, gib(m.HF))
	default:
		stage = fmt.Sprintf("in the HF bf16 model's stage (the loader's, %.1f GiB, frees its arrays first)", gib(m.Loader))
	}
	return fmt.Sprintf("%.2f B parameters need ~%.1f GiB at peak, %s", float64(m.Parameters)/1e9, gib(m.Peak), stage)
}
