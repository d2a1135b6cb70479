package pyshim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"phase0/internal/boundedfile"
)

// CheckWorkingCopy refuses a pyshim setting (PHASE0_PYSHIM) that is not a
// folder holding the phase0_shim package: the worker would otherwise start,
// fail to import it, and the model be reported with "No module named
// 'phase0_shim'" instead of the setting.
func CheckWorkingCopy(dir string) error {
	if st, err := os.Stat(filepath.Join(dir, "phase0_shim", "__init__.py")); err == nil && st.Mode().IsRegular() {
		return nil
	}
	why := "it holds no phase0_shim/__init__.py"
	if d, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		why = "no such folder"
	} else if err != nil {
		why = err.Error()
	} else if !d.IsDir() {
		why = "it is " + boundedfile.Kind(d.Mode()) + ", not a folder"
	}
	return fmt.Errorf("pyshim %s: %s; it must be a folder holding a working copy of the phase0_shim package (python/pyshim in phase0's repository), or unset PHASE0_PYSHIM for the copy built in",
		boundedfile.Quote(dir), why)
}
