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


def test_rmsnorm_tkg_layout_follows_the_lnc_degree():
    from benchmarks.corpus.library import call_reference

    rng = np.random.default_rng(2)
    b, s, h = 2, 3, 128 * 4
    x = rng.standard_normal((b, s, h))
    gamma = rng.uniform(0.5, 1.5, (1, h))
    norm = (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * gamma[0]).reshape(b * s, h)
    ref = REFERENCES["rmsnorm_tkg"]
    t = {"input": x, "gamma": gamma}
    # LNC=2: H in two halves of 256; element j of half c at partition j // 2, column c*2 + j % 2
    (two,) = call_reference(ref, t, {}, lnc=2)
    (one,) = call_reference(ref, t, {}, lnc=1)
    assert two.shape == one.shape == (128, b * s, 4)
    for r in range(b * s):
        for hh in range(h):
            c, j = divmod(hh, h // 2)
            assert two[j // 2, r, c * 2 + j % 2] == norm[r, hh]
            assert one[hh // 4, r, hh % 4] == norm[r, hh]
    # the transposed hidden layout ignores the degree: element h at partition h % 128
    (tp,) = call_reference(ref, t, {"hidden_dim_tp": True}, lnc=2)
    assert tp[5, 4, 3] == norm[4, 3 * 128 + 5]
    # single_core_forced keeps the one-core layout
    (forced,) = call_reference(ref, t, {"single_core_forced": True}, lnc=2)
    np.testing.assert_array_equal(forced, one)


def test_attention_cte_computes_in_bfloat16_and_masks_causally():
    rng = np.random.default_rng(3)
    sq, d = 6, 8
    q = rng.standard_normal((1, d, sq)).astype(np.float16)  # tp_q=False: [B, d, Sq]
    k = rng.standard_normal((1, d, sq)).astype(np.float16)
    v = rng.standard_normal((1, sq, d)).astype(np.float16)
    host = {"tp_q": False, "tp_out": True, "causal_mask": True, "scale": 0.5}
    got = REFERENCES["attention_cte"]({"q": q, "k": k, "v": v}, host)
    assert got.shape == (1, d, sq)
    qb, kb, vb = (a.astype(ml_dtypes.bfloat16).astype(np.float64) for a in (q, k, v))
    for i in range(sq):  # row i sees keys 0..i only
        s = 0.5 * qb[0, :, i] @ kb[0, :, : i + 1]
        p = np.exp(s - s.max())
        np.testing.assert_allclose(got[0, :, i], p / p.sum() @ vb[0, : i + 1], rtol=1e-12)
    # the inputs hold float16 values bfloat16 cannot, so the check above tells the two apart
    assert not np.array_equal(q.astype(np.float64), qb)


def test_router_topk_selects_activates_and_scatters():
    rng = np.random.default_rng(4)
    x, w = rng.uniform(-1, 1, (64, 5)), rng.uniform(-1, 1, (64, 16))  # x is [H, T]
    logits = x.T @ w
    host = {"k": 3, "act_fn": "RouterActFnType.SOFTMAX", "router_pre_norm": False}
    got_logits, index, aff = REFERENCES["router_topk"]({"x": x, "w": w}, host)
    np.testing.assert_allclose(got_logits, logits)
    for t in range(5):
        top = sorted(range(16), key=lambda e: -logits[t, e])[:3]
        assert index[t].tolist() == top
        e = np.exp(logits[t, top] - logits[t, top].max())
        np.testing.assert_allclose(aff[t, top], e / e.sum())
        assert np.count_nonzero(aff[t]) == 3
    # activation first: without norm_topk_prob every expert's affinity is kept
    host.update(router_pre_norm=True, act_fn="RouterActFnType.SIGMOID")
    _, _, full = REFERENCES["router_topk"]({"x": x, "w": w}, host)
    np.testing.assert_allclose(full, 1 / (1 + np.exp(-logits)))
    # ... and with it, the top k of them, L1-normalised
    _, index, normed = REFERENCES["router_topk"]({"x": x, "w": w}, {**host, "norm_topk_prob": True})
    np.testing.assert_allclose(normed.sum(axis=1), 1.0)
    np.testing.assert_allclose(
        np.take_along_axis(normed, index, 1)
        * full[np.arange(5)[:, None], index].sum(1, keepdims=True),
        full[np.arange(5)[:, None], index],
    )


def test_topk_reduce_sums_the_rows_of_each_token():
    rng = np.random.default_rng(5)
    h = 6
    values = rng.standard_normal((5, h)).astype(ml_dtypes.bfloat16)
    ids = np.array([[2], [0], [-1], [2], [0]], dtype=np.int32)
    rows = np.concatenate([values, ids.view(ml_dtypes.bfloat16)], axis=1).astype(np.float32)
    got = REFERENCES["topk_reduce"]({"input": rows}, {"T": 3})
    v = values.astype(np.float64)
    np.testing.assert_array_equal(got, [v[1] + v[4], np.zeros(h), v[0] + v[3]])


def test_gen_mask_tkg_lays_positions_out_by_tile_column():
    s_prior, n, active = 512, 4, 2
    pos = np.array([[37.0, 37.0, 300.0, 300.0]])  # per batch, repeated for each active query
    host = {"bs": 2, "q_head": 3, "s_active": active, "s_prior": s_prior}
    for block in (0, 2):
        got = REFERENCES["gen_mask_tkg"]({"pos_ids_hbm": pos}, {**host, "block_len": block})
        assert got.shape == (s_prior, 2, 3, active)
        for p in range(128):
            for f in range(n):
                fold, j = divmod(f, block) if block else (0, 0)
                k = fold * block * 128 + p * block + j if block else p * n + f
                assert got[f * 128 + p, 0, 2, 1] == float(k < 37)
                assert got[f * 128 + p, 1, 0, 0] == float(k < 300)


def test_rope_interleaved_rotates_even_odd_pairs_in_place():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((8, 1, 2, 3))  # [d, B, heads, S]
    theta = rng.uniform(0, np.pi, (4, 1, 3))
    t = {"x_in": x, "cos": np.cos(theta), "sin": np.sin(theta)}
    got = REFERENCES["rope"](t, {"contiguous_layout": False})
    for i in range(4):  # the pair (x[2i], x[2i+1]) turned by theta[i]
        c, s = np.cos(theta[i])[:, None, :], np.sin(theta[i])[:, None, :]
        np.testing.assert_allclose(got[2 * i], x[2 * i] * c - x[2 * i + 1] * s)
        np.testing.assert_allclose(got[2 * i + 1], x[2 * i + 1] * c + x[2 * i] * s)
    # the same rotation as the contiguous layout, elements permuted
    order = np.r_[0:8:2, 1:8:2]
    contiguous = REFERENCES["rope"]({**t, "x_in": x[order]}, {})
    np.testing.assert_allclose(got[order], contiguous)


def test_quantize_to_mx_decodes_groups_and_checks_the_scale_code():
    from nkirt.dtypes import pack_x4

    rng = np.random.default_rng(7)
    src = rng.standard_normal((64, 16)).astype(np.float32)
    dt = {"out_data_hbm": "float8_e4m3fn_x4"}
    ref = REFERENCES["quantize_to_mx"]
    # packed here from the definition: group (8 partitions x 4 elements) code
    # floor(log2 amax) - 7 + 127, elements x / 2^(code - 127) in e4m3fn, scale rows 0-3, 32-35
    amax = np.abs(src).reshape(8, 8, 4, 4).max(axis=(1, 3))
    code = np.floor(np.log2(amax)) - 7 + 127
    scale = np.repeat(np.repeat(2.0 ** (code - 127), 8, axis=0), 4, axis=1)
    words = pack_x4(src / scale, "float8_e4m3fn_x4")
    scales = np.full((64, 4), 255, dtype=np.uint8)  # unwritten rows hold anything
    scales[[0, 1, 2, 3, 32, 33, 34, 35]] = code
    want_data, want_ratio = ref({"src_hbm": src}, {}, dtypes=dt)
    got_data, got_ratio = ref.decode([words, scales], {"src_hbm": src}, {}, dtypes=dt)
    np.testing.assert_allclose(got_data, want_data, rtol=0.0625, atol=1e-4)
    np.testing.assert_array_equal(got_ratio, want_ratio)
    assert want_ratio.sum() == 8 * 4
    scales[33, 2] += 1  # one group's scale doubled is caught
    _, bad_ratio = ref.decode([words, scales], {"src_hbm": src}, {}, dtypes=dt)
    assert bad_ratio[33, 2] == 2.0
