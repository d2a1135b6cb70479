"""Quantized test formats and fixtures for Phase 0 of quantized deployments (issue 29).

Our own packers, written from the format facts docs/formats.md states
("How the formats store their weights"), never from upstream's code:

- ``q4nx``: FastFlowLM Q4NX 32x256 affine blocks (5,120 B), both header codecs
  (``I8``: [n_blocks, 5120], ``w = scale*q + min``; ``Q4NX``: [M, K],
  ``w = scale*(q - zp)``), the even-row-low nibble order.
- ``bundle``: an HF checkpoint -> ``model.q4nx`` (bf16 embedding and norms copied
  byte for byte, projections and a quantized lm_head copy as blocks), and
  ``Bundle``, our own reader/dequant (the reference of every read-back test).
- ``q4_0``: the symmetric signed Q4_0 (32-column groups, scale = amax/8) a
  qwen25_3b_q4-style module applies on load to the bf16 checkpoint.
- ``awq``: AutoAWQ GEMM g128 ``qweight/qzeros/scales`` (int32, nibble order
  0 2 4 6 1 3 5 7) and its dequant.
- ``hub``: an offline HF cache snapshot (refs/main, blobs, snapshot symlinks)
  and FastFlowLM's repo layout (``model.q4nx``, ``config.json``, a card with
  ``base_model:``).
- ``negatives``: one bundle per failure class the quantized gate 1 must FAIL.
- ``stats``: the per-tensor statistics the Go judge uses, for calibration.
- ``models``: 256-wide tiny checkpoints whose projections fit 32x256 blocks.

Upstream-style quantized modules for the tests live in
``python/pyshim/tests/data/quant`` (a tree T: ``T/llms/<folder>``, ``T/fused_decode``,
``T/matrix_vector_multiplication/int4_awq``); ``tests/quant_helpers.assemble_tree``
adds the bf16 sibling folders and ``verify/``. Tests that run upstream's own
loaders read ``PHASE0_MLIR_AIR`` (a fetched ``programming_examples``) and skip
without it.
"""
