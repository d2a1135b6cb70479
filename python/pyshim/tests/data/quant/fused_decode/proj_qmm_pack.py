# Test fixture for phase0: the Q4NX block constants and dequant a quantized
# module imports from outside llms/, as mlir-air's llms/*_q4nx modules import
# ../../fused_decode/proj_qmm_pack.py. Written for phase0 from the format facts.

"""Q4NX 32x256 block geometry and a vectorized dequant of packed blocks.

Block (5120 B): bf16 scales[8 groups][32 rows] | bf16 mins[8][32] |
uint8 qs[2 row-groups][256 cols][8], byte k = q[g*16+2k+1] << 4 | q[g*16+2k].
"""

import numpy as np
from ml_dtypes import bfloat16

ROW_BLOCK = 32
COL_BLOCK = 256
GROUP = 32
N_GROUPS = COL_BLOCK // GROUP  # 8
PARALLEL = 16
ROW_GROUPS = ROW_BLOCK // PARALLEL  # 2
BLOCK_BYTES = 5120


def dequant_blocks(raw, M, K, subtract_zero_point=False):
    """uint8 blocks (row-block, column-block order) -> float32 [M, K].

    I8 header: w = scale*q + min. Q4NX header (subtract_zero_point): the min
    slot holds an unscaled zero point, w = scale*(q - zp).
    """
    nbi, nbj = M // ROW_BLOCK, K // COL_BLOCK
    b = np.asarray(raw, np.uint8).reshape(nbi, nbj, BLOCK_BYTES)
    sm = 2 * N_GROUPS * ROW_BLOCK

    def per_row(part):
        v = np.ascontiguousarray(part).view(bfloat16).astype(np.float32)
        v = v.reshape(nbi, nbj, N_GROUPS, ROW_BLOCK).transpose(0, 3, 1, 2)
        return np.repeat(v.reshape(M, K // GROUP), GROUP, axis=1)

    scale, offset = per_row(b[..., :sm]), per_row(b[..., sm : 2 * sm])
    qs = b[..., 2 * sm :].reshape(nbi, nbj, ROW_GROUPS, COL_BLOCK, PARALLEL // 2)
    qs = qs.transpose(0, 1, 2, 4, 3)  # [nbi, nbj, g, k, col]
    q = np.stack([qs & 0xF, qs >> 4], axis=4).astype(np.float32)
    q = q.reshape(nbi, nbj, ROW_BLOCK, COL_BLOCK).transpose(0, 2, 1, 3).reshape(M, K)
    if subtract_zero_point:
        return scale * (q - offset)
    return scale * q + offset
