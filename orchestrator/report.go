// Package orchestrator runs the Phase 0 commands as chains of named stages
// over one state, and builds the report once, at the end, from that state.
package orchestrator

import (
	"encoding/json"
	"errors"
	"time"

	"phase0/configgate"
	"phase0/model"
	"phase0/preflight"
	"phase0/verdict"
	"phase0/weights"
)

// ExitCode maps a report to the process exit code: 0 pass, 1 a gate failed
// or the model was rejected, 2 could not evaluate, 130 interrupted.
func ExitCode(r *Report) int {
	if r.Interrupted {
		return verdict.Interrupted
	}
	return r.Status.ExitCode()
}

// Stage is one timed step of a run.
type Stage struct {
	Name    string         `json:"name"`
	Status  verdict.Status `json:"status"`
	Seconds float64        `json:"seconds"`
	Detail  string         `json:"detail,omitempty"`
}

// Gates holds each gate's section; nil sections were not run.
type Gates struct {
	Weights           *weights.Result         `json:"weights"`
	ConfigConsistency *configgate.Consistency `json:"config_consistency"`
	PyWeights         *weights.Loader         `json:"python_weights,omitempty"`
	HFBaseline        *Baseline               `json:"hf_baseline,omitempty"`
}

// gate is one row of the gate table, in every rendering.
type gate struct {
	title   string
	section *verdict.Section
}

// rows lists the sections that ran, in report order.
func (g Gates) rows() []gate {
	var out []gate
	if g.Weights != nil {
		out = append(out, gate{"weights (native)", &g.Weights.Section})
	}
	if g.PyWeights != nil {
		out = append(out, gate{"weights (python)", &g.PyWeights.Section})
	}
	if g.ConfigConsistency != nil {
		out = append(out, gate{"config consistency", &g.ConfigConsistency.Section})
	}
	if g.HFBaseline != nil {
		out = append(out, gate{"hf bf16 baseline", &g.HFBaseline.Section})
	}
	return out
}

// Report is the one JSON object phase0 prints with --json.
type Report struct {
	Tool         string            `json:"tool"`
	Version      string            `json:"version"`
	Command      string            `json:"command"`
	Model        string            `json:"model"`
	ModelID      string            `json:"model_id"`
	ModelDir     string            `json:"model_dir"`
	Revision     string            `json:"revision,omitempty"`
	Source       string            `json:"source,omitempty"` // where a checkpoint that is not a hub snapshot came from
	Status       verdict.Status    `json:"status"`
	ReusedFrom   *ReusedFrom       `json:"reused_from,omitempty"` // run reused a recorded verdict (reuse.go)
	Error        string            `json:"error,omitempty"`
	Interrupted  bool              `json:"interrupted,omitempty"`
	Architecture string            `json:"architecture"`
	Family       string            `json:"family"`
	Config       *model.Config     `json:"config"`
	Defaulted    []model.Defaulted `json:"defaulted"`
	Rejections   []model.Rejection `json:"rejections"`
	Gates        Gates             `json:"gates"`
	Workspace    *Workspace        `json:"workspace,omitempty"`
	// Preflight is machine readiness for the later phases (run only);
	// informational, never part of Status.
	Preflight *preflight.Report `json:"preflight,omitempty"`
	Warnings  []string          `json:"warnings"`
	Stages    []Stage           `json:"stages"`
	Started   time.Time         `json:"started"`
	Seconds   float64           `json:"seconds"`

	// Reference is the recording later phases compare against (run, reference).
	Reference *Reference `json:"reference,omitempty"`
}

// Workspace describes the generated files of a run.
type Workspace struct {
	Dir  string `json:"dir"`
	Name string `json:"name"`
	// Mode is "generated" (phase0 wrote <name>_weights.py) or
	// "validated_existing" (it was there and not phase0's: gated, not replaced).
	Mode string `json:"mode"`
	// NamedBy lists the folder's files that name this run's hub id
	// (verify_adapter.py's MODEL_CHOICES, *_inference.py): how the llms tree
	// chose the folder.
	NamedBy []string `json:"named_by,omitempty"`
	// Foreign lists files phase0 left as they were because their bytes are
	// not its own (upstream's, or edited); never overwritten, --force or not.
	Foreign []string `json:"foreign"`
	// Swept lists temporary files a killed earlier run left, removed under the lock.
	Swept       []string `json:"swept,omitempty"`
	Written     []string `json:"written"`
	Unchanged   []string `json:"unchanged"`
	Kept        []string `json:"kept"` // documents that existed and were left as they were
	HelpersKept []string `json:"helpers_kept"`
	// RecordDir is where the record of a folder phase0 did not create
	// lives (its lock, report and reference), outside that folder.
	RecordDir  string `json:"record_dir,omitempty"`
	ReportJSON string `json:"report_json,omitempty"`
	ReportMD   string `json:"report_md,omitempty"`
}

// ErrorReport is the report of an invocation that never reached a model
// (bad flags or settings): status ERROR, so --json still prints one object.
func ErrorReport(command, modelArg, version string, err error) *Report {
	r := &Report{Tool: "phase0", Version: version, Command: command, Model: modelArg, Status: verdict.Error,
		Error: err.Error(), Defaulted: []model.Defaulted{}, Rejections: []model.Rejection{}, Warnings: []string{},
		Stages: []Stage{}, Started: time.Now().UTC().Truncate(time.Second)}
	r.Interrupted = errors.Is(err, errInterrupted)
	return r
}

// JSON renders the report, indented.
func (r *Report) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }
