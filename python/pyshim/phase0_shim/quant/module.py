"""Quantized gate 3 facts (op ``quant_module_facts``): what the module's own
config functions (or the config classes it uses) say, and where its RoPE
table comes from.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

from phase0_shim.opargs import op
from phase0_shim.optypes import QuantModuleArgs, QuantModuleFacts
from phase0_shim.quant.discovery import config_classes, config_functions, import_module

@op("quant_module_facts", QuantModuleArgs, QuantModuleFacts, nonempty=("weights_module",))
def quant_module_facts(args: QuantModuleArgs) -> QuantModuleFacts:
    """Call the module's ``*_config()`` functions, else the config classes it
    uses, with their defaults; say where its RoPE table comes from: its own
    generate_rope_lut, else the one of the module its config class comes
    from (upstream's 3B folder takes both from the bf16 llama32_3b)."""
    import dataclasses

    from phase0_shim.facts import jsonable

    module, failure = import_module(Path(args["weights_module"]))
    if failure is not None:
        return {"configs": {}, "raised": {}, "rope_lut": False, "rope_module": "", "rms_norm": False, "import_failure": failure}
    configs: dict[str, Any] = {}
    raised: dict[str, str] = {}
    functions = config_functions(module)
    classes = [] if functions else config_classes(module)
    for name in functions or classes:
        try:
            with contextlib.redirect_stdout(sys.stderr):
                config = getattr(module, name)()
        except Exception as e:  # reported as a fact; Go decides
            raised[name] = f"{type(e).__name__}: {e}"
            continue
        if dataclasses.is_dataclass(config) and not isinstance(config, type):
            values = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
        else:
            values = {k: v for k, v in vars(config).items() if not k.startswith("_")}
        configs[name] = {"class": type(config).__name__, "fields": {k: jsonable(v) for k, v in values.items()}}
    rope_lut = callable(getattr(module, "generate_rope_lut", None))
    rope_module = ""
    if not rope_lut:
        for name in classes:
            home = sys.modules.get(getattr(module, name).__module__)
            if home is not None and home is not module and callable(getattr(home, "generate_rope_lut", None)):
                rope_module = str(Path(home.__file__ or "").resolve())
                break
    return {
        "configs": configs,
        "raised": raised,
        "rope_lut": rope_lut,
        "rope_module": rope_module,
        "rms_norm": callable(getattr(module, "rms_norm", None)),
        "import_failure": None,
    }


