"""What Python code this worker ran: the facts Go stamps for verdict reuse.

Go cannot see which files an ``import`` reached without starting Python, so
the worker reports them once, at the end of a run: the file of every loaded
module, the import path, and where the standard library and the site folders
are. Go decides which of them matter and stamps them.
"""

from __future__ import annotations

import site
import sys
import sysconfig
from typing import TypedDict

from phase0_shim.opargs import NoArgs, op


class Imports(TypedDict):
    files: list[str]
    sys_path: list[str]
    stdlib: list[str]
    site_dirs: list[str]


def imported_files() -> list[str]:
    """The file every loaded module came from (built-in and namespace modules have none)."""
    files: set[str] = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path:
            files.add(path)
    return sorted(files)


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
        "files": imported_files(),
        "sys_path": list(sys.path),
        "stdlib": sorted({paths["stdlib"], paths["platstdlib"]}),
        "site_dirs": site_dirs(),
    }


@op("python_sources", NoArgs, Imports)
def python_sources(_: NoArgs) -> Imports:
    """Every module file loaded so far, sys.path, the stdlib and site folders."""
    return imports()
