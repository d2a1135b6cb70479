"""The quantized gates' facts: a quantized folder's own loader and modules
against the source checkpoint. Go computes the metrics and judges;
nothing here decides PASS or FAIL.

- ``vocab``: the tensor vocabulary, generated from Go (read/tensornames);
- ``reading``: the reference checkpoint's tensors, memory-mapped;
- ``stats``: sufficient statistics of a loader's tensor against the reference's;
- ``discovery``: importing a folder's module, finding its loader and config;
- ``run``: a quantized run's state, held by the session from gate 1 to gate 2;
- ``weights``: op ``quant_facts`` (quantized gate 1), tensor by tensor;
- ``end_to_end``: ops ``quant_e2e`` and the baseline's quantized half (quantized gate 2);
- ``module``: op ``quant_module_facts`` (quantized gate 3);
- ``families``, ``family_rope``: a deployed family's reference and conventions
  (gate 1), op ``quant_family_facts`` (its gate 3).
"""

from __future__ import annotations

from phase0_shim.quant.end_to_end import quant_e2e
from phase0_shim.quant.family_rope import quant_family_facts
from phase0_shim.quant.module import quant_module_facts
from phase0_shim.quant.weights import quant_facts

__all__ = ["quant_e2e", "quant_facts", "quant_family_facts", "quant_module_facts"]
