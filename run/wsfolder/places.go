package wsfolder

import "path/filepath"

// Places says where a run's folders go, from the settings that decide it:
// the workspace <root>/<name>/, its record, and for a folder phase0 did not
// create, the lock and the record outside it, under phase0's cache.
type Places struct {
	LLMSDir, OutDir, ReportDir, Name string
	// Cache is phase0's cache folder, created on first use.
	Cache func() (string, error)
}

// Root is the folder that holds <name>/: the llms tree, else the out_dir
// setting, else ./workspace.
func (p Places) Root() string {
	switch {
	case p.LLMSDir != "":
		return p.LLMSDir
	case p.OutDir != "":
		return p.OutDir
	}
	return "workspace"
}

// Workspace is <root>/<name> for a model id (Name: --name, the tree's
// folder, the derived name).
func (p Places) Workspace(modelID string) (string, error) {
	root, err := filepath.Abs(p.Root())
	if err != nil {
		return "", err
	}
	name, err := Name(p.Name, p.LLMSDir, modelID)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, name), nil
}

// Reports is where run records report.json for workspace ws: the
// report_dir setting, else the workspace's docs/development_progress/phase0,
// else, for a folder phase0 did not create, outside it.
func (p Places) Reports(ws, modelID string) (string, error) {
	if p.ReportDir != "" {
		return filepath.Abs(p.ReportDir)
	}
	if Foreign(ws) {
		return p.OutsideRecord(ws, modelID)
	}
	return filepath.Join(ws, "docs", "development_progress", "phase0"), nil
}

// Outside is where the lock and the records of a folder phase0 did not
// create live: it is validated, never written into.
func (p Places) Outside(ws string) (string, error) {
	cache, err := p.Cache()
	if err != nil {
		return "", err
	}
	return OutsideDir(cache, ws), nil
}

// OutsideRecord is where one model's record of such a folder lives.
func (p Places) OutsideRecord(ws, modelID string) (string, error) {
	cache, err := p.Cache()
	if err != nil {
		return "", err
	}
	return OutsideRecordDir(cache, ws, modelID), nil
}
