package orchestrator

// PyWeights is gates.python_weights: the generated <name>_weights.py loading
// the checkpoint in Python (gate 1 from the user's side).
type PyWeights struct {
	Status   string   `json:"status"`
	Layers   int      `json:"layers"`
	Tensors  int      `json:"tensors"`
	Problems []string `json:"problems"`
}

// Workspace describes the generated files of a run.
type Workspace struct {
	Dir         string   `json:"dir"`
	Name        string   `json:"name"`
	Written     []string `json:"written"`
	Unchanged   []string `json:"unchanged"`
	HelpersKept []string `json:"helpers_kept"`
	ReportJSON  string   `json:"report_json,omitempty"`
	ReportMD    string   `json:"report_md,omitempty"`
}
