package reference

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"phase0/read/model"
)

// The ranges of reference.json's fields. Every field is checked before it
// sizes anything (a slice, a loop, a row of compare's table) or reaches a
// terminal: a recording is a file anyone can edit, and compare's verdict
// must not rest on a field no recorder writes.
const (
	// MaxSteps is the most greedy steps per prompt a recording holds
	// (settings' reference_steps has the same upper end).
	MaxSteps = 1024
	// MaxTopK bounds the ids per step (upstream verify's gate uses 5).
	MaxTopK = 256
	// MaxPrompts bounds the prompts (upstream's prompt files hold 5).
	MaxPrompts = 1024
	// maxPromptBytes bounds one prompt's text.
	maxPromptBytes = 64 << 10
	// maxTextBytes bounds a name, path or version string.
	maxTextBytes = 4096
	maxThreads   = 1 << 16
	maxSeconds   = 1e7 // ~4 months
	maxTimings   = 64
)

var (
	hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)
	dtypeName = regexp.MustCompile(`^[A-Za-z0-9_.+-]{1,32}$`)
)

// checkMeta refuses a field outside its range, naming the field, the value
// and the range.
func checkMeta(path string, m *Meta) error {
	bad := func(format string, args ...any) error { return formatErr(path, format, args...) }
	if m.Format != Format {
		return bad("format %q, want %q", m.Format, Format)
	}
	if m.Role != RoleReference && m.Role != RoleCandidate {
		return bad("role %q, want %q or %q", m.Role, RoleReference, RoleCandidate)
	}
	if len(m.Prompts) == 0 || m.DecodeSteps < 1 || m.TopK < 1 {
		return bad("%d prompts, decode_steps %d, top_k %d: each must be at least 1", len(m.Prompts), m.DecodeSteps, m.TopK)
	}
	for _, n := range []struct {
		field     string
		v, lo, hi int64
	}{
		{"the number of prompts", int64(len(m.Prompts)), 1, MaxPrompts},
		{"decode_steps", int64(m.DecodeSteps), 1, MaxSteps},
		{"top_k", int64(m.TopK), 1, MaxTopK},
		{"n_layers", int64(m.NLayers), 0, int64(model.Limits.Layers)},
		{"tensors_bytes", m.TensorsBytes, 0, maxTensorsBytes},
		{"torch_threads", int64(m.TorchThreads), 0, maxThreads},
	} {
		if n.v < n.lo || n.v > n.hi {
			return bad("%s is %d, outside [%d, %d]", n.field, n.v, n.lo, n.hi)
		}
	}
	if m.CanonicalPrompt < 0 || m.CanonicalPrompt >= len(m.Prompts) {
		return bad("canonical_prompt %d is not one of the %d prompts", m.CanonicalPrompt, len(m.Prompts))
	}
	for i, p := range m.Prompts {
		if err := checkText(p, maxPromptBytes, true); err != nil {
			return bad("prompts[%d]: %v", i, err)
		}
	}
	for _, f := range []struct {
		field, v string
		need     bool
	}{
		{"runner", m.Runner, true}, {"tokenizer_sha256", m.TokenizerSHA256, true},
		{"runner_path", m.RunnerPath, false}, {"model_id", m.ModelID, false}, {"model_dir", m.ModelDir, false},
		{"revision", m.Revision, false}, {"prompt_style", m.PromptStyle, false}, {"prompts_file", m.PromptsFile, false},
		{"torch_version", m.TorchVersion, false}, {"transformers_version", m.TransformersVersion, false},
	} {
		if f.need && f.v == "" {
			return bad("%s is empty", f.field)
		}
		if err := checkText(f.v, maxTextBytes, false); err != nil {
			return bad("%s: %v", f.field, err)
		}
	}
	if m.Dtype != "" && !dtypeName.MatchString(m.Dtype) {
		return bad("dtype %q: want a dtype name such as bfloat16 (letters, digits, _.+-, at most 32)", clip(m.Dtype))
	}
	if !hexDigest.MatchString(m.TensorsSHA256) {
		return bad("tensors_sha256 %q: want 64 lower-case hex digits", clip(m.TensorsSHA256))
	}
	if m.KeySHA256 != "" && !hexDigest.MatchString(m.KeySHA256) {
		return bad("key_sha256 %q: want 64 lower-case hex digits", clip(m.KeySHA256))
	}
	if m.Created != "" {
		if _, err := time.Parse(time.RFC3339, m.Created); err != nil {
			return bad("created %q: want an RFC 3339 time such as 2026-01-02T15:04:05Z", clip(m.Created))
		}
	}
	if len(m.Seconds) > maxTimings {
		return bad("seconds has %d entries, at most %d", len(m.Seconds), maxTimings)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Seconds)) {
		if v := m.Seconds[k]; math.IsNaN(v) || v < 0 || v > maxSeconds || checkText(k, 64, false) != nil {
			return bad("seconds[%q] is %v, outside [0, %g]", clip(k), v, maxSeconds)
		}
	}
	return nil
}

// checkText refuses text longer than limit bytes or holding control
// characters (a terminal escape in a runner's name would reach the user's
// terminal through compare's table); a prompt may hold tabs and newlines.
func checkText(s string, limit int, prompt bool) error {
	if len(s) > limit {
		return fmt.Errorf("%d bytes, at most %d", len(s), limit)
	}
	if i := strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsControl(r) && !(prompt && (r == '\n' || r == '\t'))
	}); i >= 0 {
		return fmt.Errorf("a control character %q at byte %d", s[i:i+1], i)
	}
	return nil
}

// clip shortens a value a message repeats.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
