package model

import "sort"

// Family is what differs between the supported model families. Everything
// else about a checkpoint is shared and handled once, in config.go and gate.go.
type Family interface {
	// Name is the short family name used in reports, templates and file
	// names ("qwen3", as in transformers' modeling_qwen3.py).
	Name() string
	// Title is the family name as prose writes it ("Qwen3").
	Title() string
	// Architecture is the transformers class name in config.json's architectures.
	Architecture() string
	// Defaults are transformers' class defaults for keys config.json may omit.
	Defaults() ClassDefaults
	// QKVBias decides whether q/k/v projections carry a bias.
	QKVBias(r *Raw) (bias bool, note string, err error)
	// QKNorm reports whether attention applies RMSNorm to q and k per head.
	QKNorm() bool
	// SlidingWindow reports whether the config asks for sliding-window attention.
	SlidingWindow(r *Raw) (bool, string)
}

// ClassDefaults are the values transformers' config class uses when a key is absent.
type ClassDefaults struct {
	TieWordEmbeddings bool
	RMSNormEps        float64
	RopeTheta         float64
	HiddenAct         string
	// HeadDim is the class default for head_dim; 0 means hidden_size / num_attention_heads.
	HeadDim int
}

var families = []Family{llamaFamily{}, mistralFamily{}, qwen2Family{}, qwen3Family{}}

// FamilyNames lists every family's Name, in the order phase0 checks them:
// the one list of supported families that tests, fixtures and docs derive
// from or are checked against.
func FamilyNames() []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = f.Name()
	}
	return out
}

// FamilyFor returns the family of a transformers architecture name.
func FamilyFor(arch string) (Family, bool) {
	for _, f := range families {
		if f.Architecture() == arch {
			return f, true
		}
	}
	return nil, false
}

// FamilyNamed returns the family whose Name is name.
func FamilyNamed(name string) (Family, bool) {
	for _, f := range families {
		if f.Name() == name {
			return f, true
		}
	}
	return nil, false
}

// SupportedArchitectures lists the architectures phase0 accepts, sorted.
func SupportedArchitectures() []string {
	out := make([]string, 0, len(families))
	for _, f := range families {
		out = append(out, f.Architecture())
	}
	sort.Strings(out)
	return out
}

// attentionBiasFlag reads attention_bias for the families whose modelling code honours it.
func attentionBiasFlag(r *Raw) (bool, string, error) {
	v, ok, err := r.Bool("attention_bias")
	if err != nil {
		return false, "", err
	}
	if !ok {
		return false, "attention_bias absent: class default false", nil
	}
	return v, "", nil
}

// slidingUnlessDisabled is the Qwen rule: a non-null sliding_window means
// sliding-window attention unless use_sliding_window is explicitly false.
func slidingUnlessDisabled(r *Raw) (bool, string) {
	if !r.Set("sliding_window") {
		return false, ""
	}
	use, ok, err := r.Bool("use_sliding_window")
	if err == nil && ok && !use {
		return false, ""
	}
	if !ok {
		return true, "sliding_window is set and use_sliding_window is absent"
	}
	return true, "sliding_window is set and use_sliding_window is true"
}
