"""Python side of phase0.

Go drives this package through an embedded CPython in a worker process. The
entry points live in :mod:`phase0_shim.ops`; everything else is plain library
code that runs things and reports facts. Judgement happens in Go.
"""
