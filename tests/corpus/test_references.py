"""The numpy references of library kernels: argument-expression keywords, packed outputs."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from benchmarks.corpus.references import REFERENCES, call_kwargs
from nkic.frontend.args import ArgExpr

KARGS = "RmsNormQuantKernelArgs(quantization_type=QuantizationType.{q}, lower_bound={lb}, eps=1e-6)"


def test_call_kwargs_reads_literals_and_enum_members():
    assert call_kwargs(ArgExpr(KARGS.format(q="ROW", lb=0.5))) == {
        "quantization_type": "ROW",
        "lower_bound": 0.5,
        "eps": 1e-6,
    }


def _pack_row_quantised(y: np.ndarray) -> np.ndarray:
    """What the kernel writes for ROW quantisation, built independently: per row the FP8
    values y / scale, then the 4 bytes of the float32 scale max|y| / 240, all as FP8 lanes
    (saved as float32 values, as `nkic run` saves an FP8 output)."""
    scale = (np.abs(y).max(axis=-1, keepdims=True) / 240.0).astype(np.float32)
    q = (y / scale).astype(ml_dtypes.float8_e4m3)
    scale_lanes = scale.view(np.uint8).view(ml_dtypes.float8_e4m3)
    return np.concatenate([q, scale_lanes], axis=-1).astype(np.float32)


def test_rmsnorm_quant_row_decodes_the_packed_scale():
    rng = np.random.default_rng(0)
    hidden = rng.standard_normal((1, 4, 256))
    gamma = rng.uniform(0.5, 1.5, (1, 256))
    host = {"kargs": ArgExpr(KARGS.format(q="ROW", lb=0.0))}
    tensors = {"hidden": hidden, "ln_w": gamma}
    ref = REFERENCES["rmsnorm_quant"]
    want = ref(tensors, host)
    # the reference is RMSNorm: unit root-mean-square before gamma
    rms = np.sqrt(np.mean((want / gamma.reshape(-1)) ** 2, axis=-1))
    np.testing.assert_allclose(rms, 1.0, rtol=1e-5)
    (got,) = ref.decode([_pack_row_quantised(want)], tensors, host)
    np.testing.assert_allclose(got, want, rtol=0.07, atol=1e-2)
    # a wrong scale is caught
    bad = _pack_row_quantised(want * 2)
    (got,) = ref.decode([bad], tensors, host)
    assert not np.allclose(got, want, rtol=0.07, atol=1e-2)


def test_rope_hf_backward_is_the_adjoint_of_forward():
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((1, 2, 8, 16)), rng.standard_normal((1, 1, 8, 16))
    theta = rng.uniform(0, np.pi, (8, 16))
    t = {"q": q, "k": k, "cos": np.cos(theta), "sin": np.sin(theta)}
    fwd, _ = REFERENCES["rope_hf"](t, {"backward": False})
    g = rng.standard_normal(q.shape)
    bwd, _ = REFERENCES["rope_hf"]({**t, "q": g}, {"backward": True})
    # <R q, g> == <q, R^T g>
    assert np.isclose(np.sum(fwd * g), np.sum(q * bwd))
