// Package verdict owns the one status type every gate, stage and report uses,
// and the gate section (status, one summary row, findings) that each gate
// fills and that the text, JSON and Markdown renderings are all made from.
// Verdicts are decided in Go only: Python returns facts.
package verdict

import "fmt"

// Status is a verdict word. The zero value is not a valid status.
type Status string

const (
	Pass     Status = "PASS"
	Warn     Status = "WARN"     // informational: worth reading, never fails a run
	Fail     Status = "FAIL"     // a gate failed: exit 1
	Skip     Status = "SKIPPED"  // not run, because an earlier result made it pointless
	Rejected Status = "REJECTED" // the architecture gate refused the model: exit 1
	Error    Status = "ERROR"    // could not evaluate: exit 2
)

// Interrupted is the exit code of a run stopped by SIGINT/SIGTERM/SIGHUP.
const Interrupted = 130

// rank orders statuses from best to worst, for Worst.
var rank = map[Status]int{Pass: 0, Skip: 1, Warn: 2, Fail: 3, Rejected: 4, Error: 5}

// Worst returns the most serious of the statuses (Pass for none).
func Worst(statuses ...Status) Status {
	out := Pass
	for _, s := range statuses {
		if rank[s] > rank[out] {
			out = s
		}
	}
	return out
}

// Failed reports whether s makes a run fail (FAIL or REJECTED).
func (s Status) Failed() bool { return s == Fail || s == Rejected }

// ExitCode maps an overall status to the process exit code: 0 pass (warnings
// and skips included), 1 a gate failed or the model was rejected, 2 could not
// evaluate.
func (s Status) ExitCode() int {
	switch s {
	case Pass, Warn, Skip:
		return 0
	case Fail, Rejected:
		return 1
	default:
		return 2
	}
}

// Valid reports whether s is one of the defined statuses.
func (s Status) Valid() bool { _, ok := rank[s]; return ok }

// MaxFindings caps the findings a section keeps in full; the rest are counted.
const MaxFindings = 200

// Section is one gate's outcome: its status, the one-line summary every
// rendering shows, and the findings that explain a non-PASS status. Gate
// result types embed it and add their own structured fields.
type Section struct {
	Status  Status `json:"status"`
	Summary string `json:"summary"`
	// Findings are human-readable, each naming the file, tensor or field with
	// the expected and actual values. At most MaxFindings are kept.
	Findings []string `json:"findings"`
	// Omitted counts findings beyond MaxFindings.
	Omitted int `json:"findings_omitted,omitempty"`
}

// NewSection returns a passing section with an empty (not null) findings list.
func NewSection() Section { return Section{Status: Pass, Findings: []string{}} }

// Find records a finding (capped) without changing the status.
func (s *Section) Find(format string, args ...any) {
	if len(s.Findings) >= MaxFindings {
		s.Omitted++
		return
	}
	s.Findings = append(s.Findings, fmt.Sprintf(format, args...))
}

// FailWith records a finding and fails the section.
func (s *Section) FailWith(format string, args ...any) {
	s.Find(format, args...)
	s.Status = Worst(s.Status, Fail)
}

// AllFindings is Findings plus a closing "… and N more" line when some were omitted.
func (s *Section) AllFindings() []string {
	if s.Omitted == 0 {
		return s.Findings
	}
	return append(append([]string(nil), s.Findings...), fmt.Sprintf("… and %d more", s.Omitted))
}
