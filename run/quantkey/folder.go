package quantkey

import (
	"context"
	"fmt"
	"path/filepath"

	"phase0/gate/quant"
	"phase0/gate/quantfolder"
	"phase0/gate/verdict"
	"phase0/read/hfcache"
	"phase0/run/chain"
	"phase0/run/orchestrator"
)

// quantFolderStage finds the folder's module and format, resolves the
// bundle through the HF cache (offline), and takes the folder as a
// validated (foreign) workspace: its lock and record live outside it.
func quantFolderStage(_ context.Context, k *keyState) (folderResult, chain.Outcome, error) {
	s, u := k.core.Settings(), k.in.use
	llms, err := filepath.Abs(s.LLMSDir)
	if err != nil {
		return folderResult{}, chain.Outcome{}, err
	}
	if err := quant.FamilyMismatch(u, k.core.Analysis()); err != nil {
		return folderResult{}, chain.Outcome{}, err
	}
	q, warnings, err := quantfolder.Open(llms, *u, k.core.Model().Dir, hfcache.CacheDir(s.Getenv), s.Getenv(quantfolder.SourceVar))
	if err != nil {
		return folderResult{}, chain.Outcome{}, err
	}
	w, err := k.core.Foreign(q.Dir, u.Folder, u.Reference, []string{u.Module + " (upstream's quantized loader: validated, not replaced)"}, u.Key+"="+k.core.Model().ID)
	if err != nil {
		return folderResult{}, chain.Outcome{}, err
	}
	detail := fmt.Sprintf("%s key %q: %s via %s, reference %s", u.Folder, u.Key, q.Format.Name(), u.Loader, u.Reference)
	if u.Bundle != "" {
		detail += ", bundle " + q.Source
	}
	return folderResult{folder: q, ws: w}, chain.Outcome{Status: verdict.Pass, Detail: detail, Warnings: warnings}, nil
}

// folderResult is quant_folder's two results: the folder (the key's fact)
// and the run's workspace.
type folderResult struct {
	folder *quantfolder.Folder
	ws     *orchestrator.Workspace
}
