package quant

import (
	"fmt"

	"phase0/read/llmstree"
	"phase0/read/model"
)

// FamilyMismatch says why u's folder cannot be judged against its
// reference when one of them is a deployed family's (Gemma 3, Phi-3) and
// the other is not the same family: a Gemma bundle paired with a Phi
// reference would only fail tensor by tensor, for a reason the pairing
// says at once.
func FamilyMismatch(u *llmstree.Use, a *model.Analysis) error {
	if a == nil || u == nil {
		return nil
	}
	folders := model.DeployedFolders()
	refFolder := folders[a.Architecture]
	for arch, folder := range folders {
		if folder == u.Folder && arch != a.Architecture {
			return fmt.Errorf("%s deploys %s, but key %q's reference %s is %s: a bundle of one family cannot be judged against a reference of another; its MODEL_CHOICES must name a %s checkpoint",
				u.Folder, arch, u.Key, u.Reference, a.Architecture, arch)
		}
	}
	if refFolder != "" && refFolder != u.Folder {
		return fmt.Errorf("key %q of %s names %s, a %s reference, which only the tree's %s folder deploys", u.Key, u.Folder, u.Reference, a.Architecture, refFolder)
	}
	return nil
}
