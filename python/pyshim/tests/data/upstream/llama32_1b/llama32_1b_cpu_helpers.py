# Test fixture for phase0: hand-written CPU helpers in the style of mlir-air's
# llama32_1b (eps hard-coded, as the Config carries none).

"""NumPy helpers production prefill/decode import: rms_norm, softmax,
attention_reference."""

import numpy as np


def rms_norm(x, weight, eps=1e-5):
    """RMS normalization: x / sqrt(mean(x^2) + eps) * weight (Llama: eps 1e-5)."""
    x = np.asarray(x, dtype=np.float32)
    weight = np.asarray(weight, dtype=np.float32)
    rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return (x / rms) * weight


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float32)
    x_max = np.max(x, axis=axis, keepdims=True)
    exp_x = np.exp(x - x_max)
    return exp_x / np.sum(exp_x, axis=axis, keepdims=True)


def attention_reference(q, k, v, n_heads, n_kv_heads):
    """Causal GQA attention in F32; q/k already RoPE'd."""
    q = np.asarray(q, dtype=np.float32)
    k = np.asarray(k, dtype=np.float32)
    v = np.asarray(v, dtype=np.float32)
    seq_len = q.shape[0]
    head_dim = q.shape[1] // n_heads
    group = n_heads // n_kv_heads
    q = q.reshape(seq_len, n_heads, head_dim).transpose(1, 0, 2)
    k = k.reshape(seq_len, n_kv_heads, head_dim).transpose(1, 0, 2)
    v = v.reshape(seq_len, n_kv_heads, head_dim).transpose(1, 0, 2)
    mask = np.triu(np.full((seq_len, seq_len), -np.inf, dtype=np.float32), k=1)
    out = np.empty((n_heads, seq_len, head_dim), dtype=np.float32)
    for h in range(n_heads):
        scores = q[h] @ k[h // group].T / np.sqrt(head_dim) + mask
        out[h] = softmax(scores, axis=-1) @ v[h // group]
    return out.transpose(1, 0, 2).reshape(seq_len, n_heads * head_dim)
