package listrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"phase0/gate/verdict"
	"phase0/output/report"
	"phase0/output/scaffold"
	"phase0/read/hfcache"
	"phase0/read/llmstree"
	"phase0/read/model"
	"phase0/run/modelrun"
	"phase0/run/orchestrator"
)

// A list (`run @hf_models.txt --llms-dir T`) gives every line a row: a bf16
// id is validated in the folder that names it; an NPU bundle in the folder
// that loads it (one row whose status is the worst of its MODEL_CHOICES
// keys, each key's report under Keys); a bf16 id that only a quantized
// folder pairs as its reference (no folder of its own) through that folder;
// an id used by one of the tree's out-of-skill folders is REJECTED with the
// architecture gate's codes, from its config.json when it is cached, else
// from the folder that uses it.

// listFolders scans the tree once for a list ("" or an unreadable tree: nil,
// and each row's own run reports it).
func listFolders(s *orchestrator.Settings) []llmstree.Folder {
	if s.LLMSDir == "" {
		return nil
	}
	folders, err := llmstree.Scan(s.LLMSDir, scaffold.ReservedNames)
	if err != nil {
		return nil
	}
	return folders
}

// runListed is one list line's run (s is the row's own copy of the settings).
func runListed(ctx context.Context, s *orchestrator.Settings, folders []llmstree.Folder, arg, version string) *report.Report {
	id, _, _ := strings.Cut(arg, "@")
	if folder, reasons, ok := llmstree.OutOfSkill(folders, id); ok && !configCached(s, id) {
		return outOfSkillReport(arg, version, folder, reasons)
	}
	if s.Name == "" {
		if folder, ok := llmstree.ReferenceOnly(folders, id); ok {
			s.Name = folder
		}
	}
	return modelrun.Run(ctx, s, arg, version)
}

// configCached says whether id's config.json is in the HF cache (offline).
func configCached(s *orchestrator.Settings, id string) bool {
	getenv := os.Getenv
	if s.Env != nil {
		getenv = s.Env
	}
	ref, err := hfcache.ParseID(id)
	if err != nil {
		return false
	}
	res, err := hfcache.Resolve(hfcache.CacheDir(getenv), ref)
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(res.Dir, "config.json"))
	return err == nil
}

// outOfSkillReport is a REJECTED row whose reasons come from the tree
// folder that uses the id (its config.json is not cached to read them from).
func outOfSkillReport(arg, version, folder string, reasons []llmstree.Reason) *report.Report {
	r := &report.Report{Tool: "phase0", Version: version, Command: "run", Model: arg, Status: verdict.Rejected,
		Defaulted: []model.Defaulted{}, Rejections: []model.Rejection{}, Warnings: []string{},
		Stages: []report.Stage{}, Started: time.Now().UTC().Truncate(time.Second)}
	for _, why := range reasons {
		r.Rejections = append(r.Rejections, model.Rejection{Code: why.Code, Message: why.Message})
	}
	r.Warnings = append(r.Warnings, fmt.Sprintf("%s's config.json is not in the HF cache: the reasons are those of the tree's %s/, which uses it", arg, folder))
	return r
}
