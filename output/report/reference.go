package report

import (
	"fmt"
	"strings"

	"phase0/gate/reference"
	"phase0/gate/verdict"
)

// Reference is the report's reference section: the recording the later
// phases judge their runners against (phase0 compare), made once and reused.
type Reference struct {
	verdict.Section
	Dir       string `json:"dir"`
	Reused    bool   `json:"reused"`
	Refreshed bool   `json:"refreshed,omitempty"` // --refresh forced a new recording
	// Why lists what changed when an existing recording was not reused.
	Why              []string `json:"why,omitempty"`
	KeySHA256        string   `json:"key_sha256"`
	Dtype            string   `json:"dtype"`
	Runner           string   `json:"runner"`
	Prompts          int      `json:"prompts"`
	Steps            int      `json:"steps"`
	TopK             int      `json:"top_k"`
	Probes           int      `json:"probes"`
	Bytes            int64    `json:"bytes"`
	Seconds          float64  `json:"seconds"`
	SecondsLoad      float64  `json:"seconds_load,omitempty"`
	SecondsDecode    float64  `json:"seconds_decode,omitempty"`
	SecondsDiagnosis float64  `json:"seconds_diagnosis,omitempty"`
	TorchThreads     int      `json:"torch_threads,omitempty"`
}

// Describe is the recording in one phrase: prompts, steps, probes, dtype, size.
func (r *Reference) Describe() string {
	return fmt.Sprintf("%d prompts × %d steps (top-%d), %d diagnosis tensors, %s, %d KiB", r.Prompts, r.Steps, r.TopK, r.Probes, r.Dtype, (r.Bytes+1023)/1024)
}

// text is the reference's lines in the human verdict ("" when none was made).
func (r *Reference) text() string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("\n  reference: %s  %s\n", r.Status, r.Summary)
}

// markdown is report.md's reference section: what was recorded, where, how
// large, and how the later phases use it.
func (r *Reference) markdown() string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Reference (for the later phases)\n\n%s — %s\n\n", r.Status, strings.ReplaceAll(r.Summary, "|", "\\|"))
	fmt.Fprintf(&b, "| | |\n|---|---|\n| Folder | `%s` |\n| Runner | %s |\n| Recorded | %d prompts × %d greedy steps, top-%d ids + log-probs per step; %d diagnosis tensors (per-layer `ffn_out`, `final_hidden_normed`, logits) |\n",
		r.Dir, r.Runner, r.Prompts, r.Steps, r.TopK, r.Probes)
	fmt.Fprintf(&b, "| Size | %d bytes |\n| Key | `%s` |\n| Reused | %v |\n", r.Bytes, r.KeySHA256, r.Reused)
	if !r.Reused && r.SecondsLoad+r.SecondsDecode > 0 {
		fmt.Fprintf(&b, "| Seconds | load %.2f, decode %.2f, diagnosis %.2f; torch threads: %d |\n", r.SecondsLoad, r.SecondsDecode, r.SecondsDiagnosis, r.TorchThreads)
	}
	fmt.Fprintf(&b, "\nJudge any runner against it: record a candidate in the same format (`phase0_shim.reference.record_candidate`), then `phase0 compare %s CANDIDATE`.\n", r.Dir)
	return b.String()
}

// Fill takes what a recording says about itself: its runner, dtype, size
// and timings.
func (r *Reference) Fill(rec *reference.Recording) {
	m := rec.Meta
	r.Runner, r.Dtype, r.Prompts, r.Steps, r.TopK, r.Probes, r.Bytes = m.Runner, m.Dtype, len(rec.Prompts), m.DecodeSteps, m.TopK, len(rec.Probes), rec.Bytes
	r.SecondsLoad, r.SecondsDecode, r.SecondsDiagnosis = m.Seconds["load"], m.Seconds["decode"], m.Seconds["diagnosis"]
	r.TorchThreads = m.TorchThreads
}
