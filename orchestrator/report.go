// Package orchestrator runs the Phase 0 stages in order and assembles the report.
package orchestrator

import (
	"encoding/json"
	"time"

	"phase0/model"
	"phase0/weights"
)

// Overall statuses of a report; exit codes follow them.
const (
	StatusPass     = "PASS"
	StatusFail     = "FAIL"
	StatusRejected = "REJECTED"
	StatusError    = "ERROR"
)

// ExitCode maps a report status to the process exit code.
func ExitCode(status string) int {
	switch status {
	case StatusPass:
		return 0
	case StatusFail, StatusRejected:
		return 1
	default:
		return 2
	}
}

// Stage is one timed step of a run.
type Stage struct {
	Name    string  `json:"name"`
	Status  string  `json:"status"`
	Seconds float64 `json:"seconds"`
	Detail  string  `json:"detail,omitempty"`
}

// Gates holds each gate's section; nil sections were not run.
type Gates struct {
	Weights           *weights.Result      `json:"weights"`
	ConfigConsistency *weights.Consistency `json:"config_consistency"`
	PyWeights         *PyWeights           `json:"python_weights,omitempty"`
	HFBaseline        *Baseline            `json:"hf_baseline,omitempty"`
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
	Status       string            `json:"status"`
	Error        string            `json:"error,omitempty"`
	Architecture string            `json:"architecture"`
	Family       string            `json:"family"`
	Config       *model.Config     `json:"config"`
	Defaulted    []model.Defaulted `json:"defaulted"`
	Rejections   []model.Rejection `json:"rejections"`
	Gates        Gates             `json:"gates"`
	Workspace    *Workspace        `json:"workspace,omitempty"`
	Warnings     []string          `json:"warnings"`
	Stages       []Stage           `json:"stages"`
	Started      time.Time         `json:"started"`
	Seconds      float64           `json:"seconds"`
}

// NewReport returns a report with empty lists rather than nulls.
func NewReport(command, modelArg, version string) *Report {
	return &Report{Tool: "phase0", Version: version, Command: command, Model: modelArg, Status: StatusPass,
		Defaulted: []model.Defaulted{}, Rejections: []model.Rejection{}, Warnings: []string{}, Stages: []Stage{},
		Started: time.Now().UTC().Truncate(time.Second)}
}

// JSON renders the report, indented.
func (r *Report) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// settle derives the overall status from the sections. ERROR and REJECTED
// are set where they happen and are never downgraded.
func (r *Report) settle() {
	if r.Status == StatusError || r.Status == StatusRejected {
		return
	}
	failed := false
	if g := r.Gates.Weights; g != nil && g.Status == weights.StatusFail {
		failed = true
	}
	if g := r.Gates.ConfigConsistency; g != nil && g.Status == weights.StatusFail {
		failed = true
	}
	if g := r.Gates.PyWeights; g != nil && g.Status == weights.StatusFail {
		failed = true
	}
	if g := r.Gates.HFBaseline; g != nil && g.Status == weights.StatusFail {
		failed = true
	}
	if failed {
		r.Status = StatusFail
	} else {
		r.Status = StatusPass
	}
}
