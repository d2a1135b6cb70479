package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Rejection codes are stable: scripts and reports key on them.
const (
	CodeUnsupportedArchitecture = "unsupported_architecture"
	CodeMoE                     = "moe"
	CodeSlidingWindow           = "sliding_window"
	CodeMLA                     = "mla"
	CodeEncoderDecoder          = "encoder_decoder"
	CodeCustomCode              = "custom_code"
	CodeUnsupportedRopeScaling  = "unsupported_rope_scaling"
	CodeUnsupportedActivation   = "unsupported_activation"
	CodeMLPBias                 = "mlp_bias"
	CodePartialRotary           = "partial_rotary"
	CodeOutputBias              = "o_proj_bias"
	CodeInvalidConfig           = "invalid_config"
	CodeQuantized               = "quantized"
)

// Rejection is one reason the NPU pipeline cannot run a model.
type Rejection struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

var errUnsupportedRope = errors.New("unsupported rope scaling type")

// moeKeys are the config keys by which transformers' MoE families announce experts.
var moeKeys = []string{"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts"}

// mlaKeys mark DeepSeek-style multi-head latent attention.
var mlaKeys = []string{"kv_lora_rank", "q_lora_rank", "qk_rope_head_dim"}

// gate applies the architecture rules and sets a.Architecture and a.Family.
// It reports every reason that applies, not just the first.
func gate(r *Raw, a *Analysis) []Rejection {
	var out rejections
	out.architecture(r, a)
	out.packaging(r)
	out.kernels(r, a)
	return out
}

// rejections collects every reason that applies.
type rejections []Rejection

func (o *rejections) add(code, format string, args ...any) {
	*o = append(*o, Rejection{Code: code, Message: fmt.Sprintf(format, args...)})
}

// architecture: one transformers class of a supported family.
func (o *rejections) architecture(r *Raw, a *Analysis) {
	add := o.add
	supported := strings.Join(SupportedArchitectures(), ", ")

	archs, named, err := r.Strings("architectures")
	switch {
	case err != nil:
		add(CodeUnsupportedArchitecture, "%v; supported: %s", err, supported)
	case !named:
		// A policy or pipeline config (lerobot's SmolVLA) rather than a
		// transformers model's.
		add(CodeUnsupportedArchitecture, "config.json names no architectures: not a transformers model class; supported: %s", supported)
	case len(archs) != 1:
		add(CodeUnsupportedArchitecture, "config.json architectures must name exactly one class, found %q; supported: %s", archs, supported)
	default:
		a.Architecture = archs[0]
		if fam, ok := FamilyFor(archs[0]); ok {
			a.Family = fam
		} else {
			add(CodeUnsupportedArchitecture, "architecture %s is not supported%s; supported: %s", archs[0], deployedNote(archs[0]), supported)
		}
	}
}

// packaging: what the checkpoint is, beside its class (remote code, a
// quantized packaging, an encoder-decoder, experts, latent attention).
func (o *rejections) packaging(r *Raw) {
	add := o.add
	if r.Set("auto_map") {
		add(CodeCustomCode, "config.json has auto_map: the model needs custom code from the hub, and phase0 never runs remote code (trust_remote_code)")
	}
	if r.Set("quantization_config") {
		add(CodeQuantized, "config.json has quantization_config (%s): a quantized packaging holds packed integer weights and scales, not the bf16 checkpoint Phase 0 validates and HfRunner loads; run Phase 0 on its bf16 source", quantMethod(r))
	}
	if v, ok, _ := r.Bool("is_encoder_decoder"); ok && v {
		add(CodeEncoderDecoder, "is_encoder_decoder is true: only decoder-only models run on the NPU pipeline")
	}
	for _, k := range moeKeys {
		if r.Positive(k) {
			add(CodeMoE, "%s is %s: mixture-of-experts layers are not supported", k, r.NumberText(k))
			break
		}
	}
	for _, k := range mlaKeys {
		if r.Positive(k) {
			add(CodeMLA, "%s is %s: multi-head latent attention (MLA) is not supported", k, r.NumberText(k))
			break
		}
	}
}

// kernels: what the NPU's kernels implement (full attention, silu, no MLP
// or output bias, whole-head RoPE of a supported scaling).
func (o *rejections) kernels(r *Raw, a *Analysis) {
	add := o.add
	if a.Family != nil {
		if sw, why := a.Family.SlidingWindow(r); sw {
			add(CodeSlidingWindow, "%s: sliding-window attention is not supported (%s)", a.Family.Name(), why)
		}
	}
	if types, ok, _ := r.Strings("layer_types"); ok {
		for i, t := range types {
			if t != "full_attention" {
				add(CodeSlidingWindow, "layer_types[%d] is %q: only full attention is supported", i, t)
				break
			}
		}
	}
	if act, ok, _ := r.String("hidden_act"); ok && act != "silu" {
		add(CodeUnsupportedActivation, "hidden_act is %q: the NPU SwiGLU kernel implements silu only", act)
	}
	if v, ok, _ := r.Bool("mlp_bias"); ok && v {
		add(CodeMLPBias, "mlp_bias is true: the NPU MLP kernels have no bias")
	}
	if a.Family != nil {
		if ob, ok := a.Family.(outputBiaser); ok {
			if bias, why := ob.OutputBias(r); bias {
				add(CodeOutputBias, "%s: %s, and the NPU attention output projection has no bias", a.Family.Name(), why)
			}
		}
	}
	if v, ok, err := r.Float("partial_rotary_factor"); err == nil && ok && v != 1 {
		add(CodePartialRotary, "partial_rotary_factor is %g: RoPE must rotate the whole head (1.0)", v)
	}
	if a.Family != nil {
		for _, key := range []string{"rope_scaling", "rope_parameters"} {
			m, ok, err := r.Object(key)
			if err != nil || !ok {
				continue
			}
			if typ, err := ropeType(m); err == nil && !slices.Contains(SupportedRopeTypes, typ) {
				add(CodeUnsupportedRopeScaling, "%s type %q is not implemented; supported: %s", key, typ, strings.Join(SupportedRopeTypes, ", "))
			}
		}
	}
}

// quantMethod names a quantization_config's method (AWQ, GPTQ, fp8 …) for
// the rejection message.
func quantMethod(r *Raw) string {
	m, ok, err := r.Object("quantization_config")
	if err != nil || !ok {
		return "no quant_method"
	}
	var method string
	if json.Unmarshal(m["quant_method"], &method) != nil || method == "" {
		return "no quant_method"
	}
	return fmt.Sprintf("quant_method %q", method)
}
