// Package report is the Phase 0 report: the one JSON object a run prints
// with --json, its sections, and its renderings (the text verdict table,
// report.md, the top-10 chart, the report files). The orchestrator builds a
// Report from its stages; this package only shows it.
package report

import (
	"encoding/json"
	"time"

	"phase0/gate/baseline"
	"phase0/gate/config"
	"phase0/gate/preflight"
	"phase0/gate/quant"
	"phase0/gate/verdict"
	"phase0/gate/weights"
	"phase0/read/model"
)

// Workspace modes (workspace.mode in the report).
const (
	ModeGenerated         = "generated"
	ModeValidatedExisting = "validated_existing"
)

// Stage is one timed step of a run.
type Stage struct {
	Name    string         `json:"name"`
	Status  verdict.Status `json:"status"`
	Seconds float64        `json:"seconds"`
	Detail  string         `json:"detail,omitempty"`
}

// Gates holds each gate's section; nil sections were not run.
type Gates struct {
	Weights           *weights.Result     `json:"weights"`
	ConfigConsistency *config.Consistency `json:"config_consistency"`
	PyWeights         *weights.Loader     `json:"python_weights,omitempty"`
	HFBaseline        *baseline.Baseline  `json:"hf_baseline,omitempty"`
	// A quantized folder's gates 1 and 3 and its pairing (quant/).
	QuantWeights *quant.Weights   `json:"quantized_weights,omitempty"`
	QuantConfig  *quant.Constants `json:"quantized_config,omitempty"`
	Pairing      *quant.Pairing   `json:"pairing,omitempty"`
	QuantE2E     *quant.EndToEnd  `json:"quantized_end_to_end,omitempty"`
}

// QuantizedKey is the quantized folder's MODEL_CHOICES key a run validated.
type QuantizedKey struct {
	Folder    string `json:"folder"`
	Key       string `json:"key"`
	Reference string `json:"reference"`
	Bundle    string `json:"bundle,omitempty"`
	Loader    string `json:"loader"`
}

// Gate is one row of the gate table, in every rendering.
type Gate struct {
	Title   string
	Section *verdict.Section
}

// Rows lists the sections that ran, in report order.
func (g Gates) Rows() []Gate {
	var out []Gate
	if g.Weights != nil {
		out = append(out, Gate{"weights (native)", &g.Weights.Section})
	}
	if g.PyWeights != nil {
		out = append(out, Gate{"weights (python)", &g.PyWeights.Section})
	}
	if g.QuantWeights != nil {
		out = append(out, Gate{"weights (quantized " + g.QuantWeights.Format + ")", &g.QuantWeights.Section})
	}
	if g.ConfigConsistency != nil {
		out = append(out, Gate{"config consistency", &g.ConfigConsistency.Section})
	}
	if g.QuantConfig != nil {
		out = append(out, Gate{"config consistency (quantized module)", &g.QuantConfig.Section})
	}
	if g.Pairing != nil {
		out = append(out, Gate{"pairing (bundle source vs reference)", &g.Pairing.Section})
	}
	if g.HFBaseline != nil {
		out = append(out, Gate{"hf bf16 baseline", &g.HFBaseline.Section})
	}
	if g.QuantE2E != nil {
		out = append(out, Gate{"quantized end to end (" + g.QuantE2E.Format + " in the bf16 model)", &g.QuantE2E.Section})
	}
	return out
}

// Report is the one JSON object phase0 prints with --json.
type Report struct {
	// Quantized names the quantized folder's key a run validated (nil for
	// a bf16 run); Keys are the other keys' reports of the same command
	// (a bundle loaded by a folder with base and instruct keys).
	Quantized    *QuantizedKey     `json:"quantized,omitempty"`
	Keys         []*Report         `json:"keys,omitempty"`
	Tool         string            `json:"tool"`
	Version      string            `json:"version"`
	Command      string            `json:"command"`
	Model        string            `json:"model"`
	ModelID      string            `json:"model_id"`
	ModelDir     string            `json:"model_dir"`
	Revision     string            `json:"revision,omitempty"`
	Source       string            `json:"source,omitempty"` // where a checkpoint that is not a hub snapshot came from
	Status       verdict.Status    `json:"status"`
	ReusedFrom   *ReusedFrom       `json:"reused_from,omitempty"` // run reused a recorded verdict (the orchestrator's reuse)
	Error        string            `json:"error,omitempty"`
	ErrorKind    ErrorKind         `json:"error_kind,omitempty"` // why it could not be evaluated, as a word (errorkind.go)
	Interrupted  bool              `json:"interrupted"`
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
	RecordDir string `json:"record_dir,omitempty"`
	// Entered lists what the record wrote into such a folder (a mid-
	// deployment one's progress.md entry and TODO.md tick), as paths
	// relative to it; a folder with none is left as it was.
	Entered    []string `json:"entered,omitempty"`
	ReportJSON string   `json:"report_json,omitempty"`
	ReportMD   string   `json:"report_md,omitempty"`
}

// ReusedFrom names the recorded verdict a run reused (report.json) and when
// it was reached.
type ReusedFrom struct {
	Path     string    `json:"path"`
	Recorded time.Time `json:"recorded"`
}

// modeText is the workspace mode as the text and Markdown reports say it.
func (w *Workspace) modeText() string {
	if w.Mode == ModeValidatedExisting {
		return "validated existing " + w.Name + "_weights.py"
	}
	return w.Mode
}

// JSON renders the report, indented.
func (r *Report) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }
