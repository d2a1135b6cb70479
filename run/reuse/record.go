package reuse

import (
	"encoding/json"
	"fmt"

	"phase0/output/report"
)

// Encode is inputs.json for the record just committed: in, with the
// workspace stamped as the record left it, naming report.json (at path,
// whose bytes are among files) by its sha256.
func Encode(in *Record, ws, path string, files []report.File) ([]byte, error) {
	rec := *in
	rec.Report = path
	for _, f := range files {
		if f.Path == path {
			rec.ReportSHA256 = SHA256Hex(f.Data)
		}
	}
	if rec.ReportSHA256 == "" {
		return nil, fmt.Errorf("inputs.json: the record has no %s", path)
	}
	stamp, err := StampWorkspace(ws)
	if err != nil {
		return nil, fmt.Errorf("inputs.json: %w", err)
	}
	rec.Inputs.Workspace = stamp
	js, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("inputs.json: %w", err)
	}
	return append(js, '\n'), nil
}
