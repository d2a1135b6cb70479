# Test fixture for phase0: the AutoAWQ unpacking a llama32_1b_int4-style module
# imports from matrix_vector_multiplication/int4_awq, written for phase0 from
# AutoAWQ's format.

"""AutoAWQ GEMM int32 packing: 8 nibbles per int32, column order 0 2 4 6 1 3 5 7."""

import numpy as np

AWQ_ORDER = np.array([0, 2, 4, 6, 1, 3, 5, 7])


def unpack_int32(packed):
    """[..., N/8] int32 -> [..., N] uint8 nibbles in column order."""
    p = np.asarray(packed).view(np.uint32)
    nib = np.stack([(p >> np.uint32(4 * i)) & 0xF for i in range(8)], axis=-1)
    out = np.empty_like(nib)
    out[..., AWQ_ORDER] = nib
    return out.reshape(*p.shape[:-1], p.shape[-1] * 8).astype(np.uint8)
