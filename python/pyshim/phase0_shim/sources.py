"""What Python code this worker ran: the facts Go stamps for verdict reuse.

Go cannot see which files an ``import`` reached without starting Python, so
the worker reports them once, at the end of a run: every loaded module (its
name, its file and, for a package, the folders its submodules were looked up
in), the import path, and where the standard library and the site folders
are. Go decides which of them matter and stamps them.
"""

from __future__ import annotations

import site
import sys
import sysconfig
from phase0_shim.opargs import NoArgs, op
from phase0_shim.optypes import ImportedModule, Imports


def imported_modules() -> list[ImportedModule]:
    """Every loaded module: the import map, and where its submodules were looked up."""
    out: list[ImportedModule] = []
    for name, module in sorted(list(sys.modules.items()), key=lambda item: item[0]):
        if module is None:  # a failed import remembered as missing
            continue
        path = getattr(module, "__file__", None)
        search = getattr(module, "__path__", None)
        try:
            folders = [str(p) for p in search] if search is not None else []
        except TypeError:  # a __path__ that is not iterable
            folders = []
        out.append({"name": name, "file": path if isinstance(path, str) else "", "search": folders})
    return out


def site_dirs() -> list[str]:
    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    if site.ENABLE_USER_SITE and site.USER_SITE:
        dirs.append(site.USER_SITE)
    for key in ("purelib", "platlib"):
        dirs.append(sysconfig.get_paths()[key])
    return sorted(set(dirs))


def imports() -> Imports:
    paths = sysconfig.get_paths()
    return {
        "modules": imported_modules(),
        "sys_path": list(sys.path),
        "stdlib": sorted({paths["stdlib"], paths["platstdlib"]}),
        "site_dirs": site_dirs(),
    }


@op("python_sources", NoArgs, Imports)
def python_sources(_: NoArgs) -> Imports:
    """Every module loaded so far, sys.path, the stdlib and site folders."""
    return imports()
