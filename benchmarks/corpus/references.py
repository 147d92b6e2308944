"""Numpy references for NKI Library kernels, written here from each kernel's documented
semantics (its docstring and, where that is silent, what its tests check), never copied. Each takes the input
tensors and host values of a case, by argument name, and returns the expected output or a
tuple of outputs in the kernel's return order. Computed in float64. A reference whose output
layout depends on the number of logical cores takes it as the keyword `lnc`; one that needs
the NKI dtypes of the tensor arguments (packed element types), the keyword `dtypes`.

A host value given as an expression (`kargs = "Args(eps=1e-6, mode=Mode.ROW)"`) arrives as an
`ArgExpr`; `call_kwargs` reads its keywords. A reference may carry a `decode` attribute: a
function (outputs, tensors, host) -> outputs that turns the kernel's raw outputs (packed
formats) into what the reference returns."""

from __future__ import annotations

import numpy as np


def _f64(a: np.ndarray) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def call_kwargs(expr) -> dict[str, object]:
    """The keywords of a constructor call given as an argument expression: literals as
    values, an attribute such as `QuantizationType.ROW` as its last name ('ROW')."""
    import ast

    tree = ast.parse(str(expr), mode="eval").body
    out: dict[str, object] = {}
    for kw in getattr(tree, "keywords", []):
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            out[kw.arg] = (
                kw.value.attr if isinstance(kw.value, ast.Attribute) else ast.unparse(kw.value)
            )
    return out


def _as_bf16(a: np.ndarray) -> np.ndarray:
    """The values rounded to bfloat16 (round to nearest even), as a kernel that computes in
    bfloat16 sees them."""
    import ml_dtypes

    return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16)


def _rms_normalise(x: np.ndarray, gamma: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * gamma over the last axis."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gamma.reshape(-1)


def cumsum(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """Inclusive prefix sum along `axis` (default: the last)."""
    return np.cumsum(_f64(t["x"]), axis=int(host.get("axis", -1)))


def cascaded_max(t: dict[str, np.ndarray], host: dict[str, object]) -> tuple:
    """Max over the last axis and the index of its first occurrence, both keeping the axis."""
    x = _f64(t["input_tensor"])
    return x.max(axis=-1, keepdims=True), x.argmax(axis=-1)[..., None].astype(np.int32)


def conv1d(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """y[b, o, l] = sum over k, c of x_pad[b, c, l*stride + k*dilation] * w[k, c, o] + bias[o],
    with x [B, C_in, L], w [K, C_in, C_out] and `padding` (left, right) zeros."""
    x, w = _f64(t["x_in"]), _f64(t["filters"])
    stride, dilation = int(host.get("stride", 1)), int(host.get("dilation", 1))
    left, right = host.get("padding", (0, 0))
    if host.get("activation_fn") is not None:
        raise ValueError("the conv1d reference has no activation")
    x = np.pad(x, ((0, 0), (0, 0), (left, right)))
    k_size = w.shape[0]
    l_out = (x.shape[2] - dilation * (k_size - 1) - 1) // stride + 1
    y = np.zeros((x.shape[0], w.shape[2], l_out))
    for k in range(k_size):
        start = k * dilation
        window = x[:, :, start : start + stride * (l_out - 1) + 1 : stride]  # [B, C_in, L_out]
        y += np.einsum("bcl,co->bol", window, w[k])
    if "bias" in t:
        y += _f64(t["bias"])[None, :, None]
    return y


def depthwise_conv1d(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """Per-channel cross-correlation along the width: img [N, C, 1, W], filter [C, 1, 1, S],
    out [N, C, 1, Q] with Q = (W + pad_l + pad_r - S) // stride + 1."""
    img, f = _f64(t["img_ref"]), _f64(t["filter_ref"])
    (_, _), (pad_l, pad_r) = host.get("padding", ((0, 0), (0, 0)))
    _, stride = host.get("stride", (1, 1))
    img = np.pad(img, ((0, 0), (0, 0), (0, 0), (pad_l, pad_r)))
    s = f.shape[3]
    q = (img.shape[3] - s) // stride + 1
    out = np.zeros(img.shape[:3] + (q,))
    for i in range(s):
        out += img[..., i : i + stride * (q - 1) + 1 : stride] * f[None, :, 0, 0, i, None, None]
    return out


def cross_entropy_forward(t: dict[str, np.ndarray], host: dict[str, object]) -> tuple:
    """Per position: loss = logsumexp(logits) - logits[target], and the logsumexp itself."""
    logits = _f64(t["logits_hbm"])
    targets = t["targets_hbm"].astype(np.int64)
    m = logits.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True)))[:, 0]
    loss = lse - logits[np.arange(len(targets)), targets]
    return loss, lse


def elementwise_add(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """a + b over the rows the run-time tile count covers (all of them in the tests)."""
    return _f64(t["input_a"]) + _f64(t["input_b"])


def indexed_flatten(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """Row e of input [E, T], cut into blocks of f_len, lands at block row_offsets[e] onwards
    of a padding-filled output of output_len; blocks past the end are dropped."""
    x = t["input_tensor"]
    f_len, out_len = int(host["f_len"]), int(host["output_len"])
    out = np.full(out_len // f_len * f_len, float(host.get("padding_val", -1)))
    blocks = out.reshape(-1, f_len)
    for e, offset in enumerate(t["row_offsets"].astype(np.int64)[: x.shape[0]]):
        for p, block in enumerate(x[e].reshape(-1, f_len)):
            if 0 <= offset + p < len(blocks):
                blocks[offset + p] = block
    return out


def output_projection_cte(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """out[b, s, h] = sum over n, d of attention[b, n, d, s] * weight[n*D + d, h] + bias[0, h]."""
    att, w = _f64(t["attention"]), _f64(t["weight"])
    n, d = att.shape[1:3]
    out = np.einsum("bnds,ndh->bsh", att, w.reshape(n, d, -1))
    if "bias" in t:
        out += _f64(t["bias"])[0]
    return out


def output_projection_tkg(
    t: dict[str, np.ndarray], host: dict[str, object], lnc: int = 1
) -> np.ndarray:
    """y[b*S + s, h] = sum over n, d of attention[d, b, n, s] * weight[n*D + d, h] + bias[0, h].
    With TRANSPOSE_OUT the kernel documents the layout [128, H0, H2, B*S], H0 the LNC degree
    and H2 = H / H0 / 128, holding y[r, h] at [h1, h0, h2, r] for h = (h0*128 + h1)*H2 + h2."""
    att, w = _f64(t["attention"]), _f64(t["weight"])
    d, b, n, s = att.shape
    out = np.einsum("dbns,ndh->bsh", att, w.reshape(n, d, -1)).reshape(b * s, -1)
    if "bias" in t:
        out += _f64(t["bias"])[0]
    if host.get("TRANSPOSE_OUT"):
        return out.reshape(b * s, lnc, 128, -1).transpose(2, 1, 3, 0)
    return out


def qkv_no_norm(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """The fused QKV projection without norm, residual add or RoPE, in the [B, S, D] layout:
    out = input @ fused_qkv_weights + bias."""
    out = np.einsum("bsh,hd->bsd", _f64(t["input"]), _f64(t["fused_qkv_weights"]))
    if "bias" in t:
        out += _f64(t["bias"])[0]
    return out


def attention_cte(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """softmax(scale * q k^T, causal-masked when asked) v, without prior KV, sinks or windows.
    q is [B, Sq, d] when tp_q (default) else [B, d, Sq]; k is [B, d, Skv] unless tp_k; v is
    [B, Skv, d]; the output is [B, Sq, d], or [B, d, Sq] with tp_out. Rows in blocks, to
    bound memory at long sequence lengths. The kernel documents float32 softmax and bfloat16
    for every other operation, whatever the input dtype: q, k and v are taken as bfloat16
    (float16 inputs otherwise differ by up to ~2.5% of the largest output at d=128)."""
    q, k, v = (_f64(_as_bf16(t[name])) for name in ("q", "k", "v"))
    if not host.get("tp_q", True):
        q = q.transpose(0, 2, 1)
    if host.get("tp_k", False):
        k = k.transpose(0, 2, 1)
    scale, causal = float(host.get("scale", 1.0)), bool(host.get("causal_mask", True))
    out = np.empty(q.shape[:2] + (v.shape[2],))
    for start in range(0, q.shape[1], 1024):
        s = np.einsum("bqd,bdk->bqk", q[:, start : start + 1024], k) * scale
        if causal:
            rows = np.arange(start, start + s.shape[1])[:, None]
            s = np.where(np.arange(k.shape[2])[None, :] <= rows, s, -np.inf)
        s = np.exp(s - s.max(axis=2, keepdims=True))
        out[:, start : start + 1024] = np.einsum("bqk,bkd->bqd", s / s.sum(2, keepdims=True), v)
    return out.transpose(0, 2, 1) if host.get("tp_out", False) else out


def find_nonzero_indices_with_count(t: dict[str, np.ndarray], host: dict[str, object]):
    """For input [1, T]: [1, T+1] int32 holding the nonzero positions in order, then -1s, and
    the count of nonzeros in the last place."""
    (idx,) = np.nonzero(t["input_tensor"][0])
    out = np.full((1, t["input_tensor"].shape[1] + 1), -1, dtype=np.int64)
    out[0, : len(idx)] = idx
    out[0, -1] = len(idx)
    return out


def find_nonzero_indices(t: dict[str, np.ndarray], host: dict[str, object]) -> tuple:
    """For input [T, C]: per column c (those from col_start_id, n_cols of them, when given) the
    row indices of its nonzeros in order, then -1s, as [C, T]; and the counts [C]."""
    if "col_start_id" in t:
        _skip("the reference reads every column")
    x = t["input_tensor"]
    out = np.full((x.shape[1], x.shape[0]), -1, dtype=np.int64)
    counts = np.zeros(x.shape[1], dtype=np.int64)
    for c in range(x.shape[1]):
        (idx,) = np.nonzero(x[:, c])
        out[c, : len(idx)] = idx
        counts[c] = len(idx)
    return out, counts


def router_topk(t: dict[str, np.ndarray], host: dict[str, object]) -> tuple:
    """MoE router, for x [H, T] in HBM (x_hbm_layout 0): logits = x^T w + w_bias [T, E]; the
    top k experts per token by value (descending) -- of act(logits) with router_pre_norm,
    else of the logits, whose k values then go through act (softmax over those k); L1
    normalised with norm_topk_prob; the affinities scattered to [T, E], zero elsewhere --
    except with router_pre_norm and no norm_topk_prob, where the affinities are act(logits)
    for every expert (as the library's test golden has them). act is SOFTMAX (over the last
    axis) or SIGMOID. Returns logits, indices [T, k] and the affinities, the kernel's order."""
    if "XHBMLayout_H_T__0" not in str(host.get("x_hbm_layout", "XHBMLayout_H_T__0")):
        _skip("the reference reads x in the [H, T] layout")
    logits = _f64(t["x"]).T @ _f64(t["w"])
    if "w_bias" in t:
        logits = logits + _f64(t["w_bias"]).reshape(-1)
    k = int(host["k"])
    softmax = str(host["act_fn"]).endswith("SOFTMAX")

    def act(a: np.ndarray) -> np.ndarray:
        if softmax:
            e = np.exp(a - a.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
        return 1.0 / (1.0 + np.exp(-a))

    pre = bool(host.get("router_pre_norm", True))
    scores = act(logits) if pre else logits
    index = np.argsort(-scores, axis=-1, kind="stable")[:, :k]
    top = np.take_along_axis(scores, index, axis=-1)
    if pre and not host.get("norm_topk_prob"):
        return logits, index, scores
    if not pre:
        top = act(top)
    if host.get("norm_topk_prob"):
        top = top / top.sum(axis=-1, keepdims=True)
    affinities = np.zeros_like(logits)
    np.put_along_axis(affinities, index, top, axis=-1)
    return logits, index, affinities


def topk_reduce(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """For input [R, H + 2] of 16-bit values whose last two lanes hold a row's int32 token
    index: output [T, H], row i the sum of the first H values of every row of token i."""
    import ml_dtypes

    x = np.asarray(t["input"], dtype=np.float32).astype(ml_dtypes.bfloat16)
    ids = np.ascontiguousarray(x[:, -2:]).view(np.int32)[:, 0]
    values = x[:, :-2].astype(np.float64)
    out = np.zeros((int(host["T"]), values.shape[1]))
    for i in range(out.shape[0]):
        out[i] = values[ids == i].sum(axis=0)
    return out


def gen_mask_tkg(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """The token-generation attention mask over the prior KV positions: position k of batch b
    is visible (1) when k < cache_len[b] = pos_ids[0, b * s_active], for every head and active
    query; output [s_prior, bs, q_head, s_active], row f * 128 + p holding tile column f of
    partition p (n = s_prior / 128 columns). Flat cache (block_len 0, strided): position
    k = p * n + f. Block cache: k = fold * block_len * 128 + p * block_len + j at column
    f = fold * block_len + j (the block length as given: the kernel may shrink it to fit,
    which the reference does not model)."""
    if "start_pos_hbm" in t or "active_mask" in t:
        _skip("the reference has no sliding window or active mask")
    bs, heads, active = int(host["bs"]), int(host["q_head"]), int(host["s_active"])
    s_prior, block = int(host["s_prior"]), int(host.get("block_len", 0))
    cache_len = _f64(t["pos_ids_hbm"])[0, ::active][:bs]
    visible = (np.arange(s_prior)[:, None] < cache_len[None, :]).astype(np.float64)  # [k, b]
    n = s_prior // 128
    if block and n % block:
        _skip(f"block_len {block} does not fit {n} tile columns: the kernel resizes it")
    if block:  # k ordered (fold, p, j) -> column (fold, j), partition p
        tiles = visible.reshape(n // block, 128, block, bs).transpose(1, 0, 2, 3)
    else:  # k ordered (p, f)
        tiles = visible.reshape(128, n, bs)
    rows = tiles.reshape(128, n, bs).transpose(1, 0, 2).reshape(s_prior, bs)  # row f*128 + p
    return np.broadcast_to(rows[:, :, None, None], (s_prior, bs, heads, active)).copy()


def tp_broadcast(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """Column `src_offset` of the source (after selecting `src_select_index` on dimension 1,
    when given, and flattening the rest), repeated as `broadcast_count` rows."""
    src = _f64(t["src_hbm"])
    if host.get("src_select_index") is not None:
        src = src[:, int(host["src_select_index"])]
    column = src.reshape(src.shape[0], -1)[:, int(host["src_offset"])]
    return np.tile(column, (int(host["broadcast_count"]), 1))


def cross_partition_copy(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """Zeros, with partitions [dst, dst + n) set to the source's partitions [src, src + n)."""
    x = _f64(t["input_data"])
    src, dst = int(host["src_start_partition"]), int(host["dst_start_partition"])
    n, f = int(host["num_partitions_to_copy"]), int(host["free_dim_size"])
    out = np.zeros_like(x)
    out[dst : dst + n, :f] = x[src : src + n, :f]
    return out


FP8_E4M3_MAX = 240.0


def rmsnorm_quant(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """RMS normalisation (or none, NO_NORM) of the last axis, then FP8 (e4m3) quantisation.
    Compared after dequantisation (see `decode`): the values the quantised output stands for.
    ROW: per row, with lower bound L > 0 the values are clipped to [-L, L]; the row's scale is
    max|y| / 240. STATIC: y / s clipped to +-240, s = input_dequant_scale[0, 0]."""
    kw = call_kwargs(host["kargs"])
    y = _f64(t["hidden"])
    if kw.get("norm_type", "RMS_NORM") == "RMS_NORM":
        y = _rms_normalise(y, _f64(t["ln_w"]), float(kw.get("eps", 1e-6)))
    if kw.get("quantization_type", "ROW") == "STATIC":
        s = float(t["input_dequant_scale"].reshape(-1)[0])
        return np.clip(y / s, -FP8_E4M3_MAX, FP8_E4M3_MAX) * s
    bound = float(kw.get("lower_bound", 0.0))
    return np.clip(y, -bound, bound) if bound > 0 else y


def _rmsnorm_quant_decode(outputs: list, t: dict[str, np.ndarray], host: dict[str, object]):
    """The kernel's output dequantised: ROW packs each row as H FP8 values followed by the
    4 bytes of its float32 dequantisation scale; STATIC is H FP8 values per row."""
    import ml_dtypes

    (out,) = outputs
    if call_kwargs(host["kargs"]).get("quantization_type", "ROW") == "STATIC":
        return [out * float(t["input_dequant_scale"].reshape(-1)[0])]
    fp8 = np.asarray(out, np.float32).astype(ml_dtypes.float8_e4m3)
    scale = np.ascontiguousarray(fp8[..., -4:]).view(np.float32)  # [B, S, 1]
    return [fp8[..., :-4].astype(np.float64) * scale]


rmsnorm_quant.decode = _rmsnorm_quant_decode


#: Largest exponent of each MX element type: the scale puts a group's largest magnitude in
#: [2^(Emax - 1), 2^Emax)
MX_EMAX = {"float8_e4m3fn_x4": 8, "float8_e5m2_x4": 15}


def _mx_scale_row(group: int, partitions: int) -> int:
    """The scale-tile row of partition group `group` (8 partitions each): the first four
    partitions of each 32-partition quadrant hold its four groups."""
    return group if partitions <= 32 else group // 4 * 32 + group % 4


def _mx_codes(src: np.ndarray, emax: int) -> np.ndarray:
    """The e8m0 scale code of each group of 8 partitions x 4 elements of src [P, F], as
    [P/8, F/4]: floor(log2 max|x|) - (Emax - 1) + 127, clamped to [0, 254]; 0 for an all-zero
    group."""
    p, f = src.shape
    amax = np.abs(src).reshape(p // 8, 8, f // 4, 4).max(axis=(1, 3))
    with np.errstate(divide="ignore"):
        code = np.floor(np.log2(amax)) - (emax - 1) + 127
    return np.where(amax > 0, np.clip(code, 0, 254), 0)


def quantize_to_mx(
    t: dict[str, np.ndarray], host: dict[str, object], dtypes: dict[str, str]
) -> tuple:
    """MX quantisation of src [P, F] in groups of 8 partitions x 4 elements, each group scaled
    by 2^(code - 127) with the code of `_mx_codes`. Compared after `decode`: the data output
    dequantised is the source itself (the tolerance is the element type's rounding); the
    scale output [P, F/4] is compared as the ratio of each group's scale to the documented
    one, 1 on the group's scale row, and 0 on the rows no group uses (the kernel leaves them
    unwritten)."""
    src = _f64(t["src_hbm"])
    p, f = src.shape
    ratios = np.zeros((p, f // 4))
    ratios[[_mx_scale_row(g, p) for g in range(p // 8)]] = 1.0
    return src, ratios


def _quantize_to_mx_decode(
    outputs: list, t: dict[str, np.ndarray], host: dict[str, object], dtypes: dict[str, str]
):
    """The packed data words unpacked and multiplied by their group's scale 2^(code - 127);
    the scale rows in use as the ratio of their scale to the documented one, the others 0."""
    from nkirt.dtypes import unpack_x4

    words, scales = outputs
    values = unpack_x4(np.asarray(words), dtypes["out_data_hbm"]).astype(np.float64)
    p = values.shape[0]
    rows = [_mx_scale_row(g, p) for g in range(p // 8)]
    code = np.asarray(scales, dtype=np.float64)[rows]  # [groups, F/4]
    factor = np.repeat(np.repeat(2.0 ** (code - 127), 8, axis=0), 4, axis=1)
    ratios = np.zeros(np.shape(scales))
    want = _mx_codes(_f64(t["src_hbm"]), MX_EMAX[dtypes["out_data_hbm"]])
    ratios[rows] = 2.0 ** (code - want)
    return [values * factor, ratios]


quantize_to_mx.decode = _quantize_to_mx_decode


def _skip(why: str):
    from .library import SkipNumerics

    raise SkipNumerics(why)


def rope(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """Rotary embedding of x [d, B, heads, S] with cos, sin [d/2, B, S]: pairs (x1[i], x2[i])
    rotate to (x1 cos - x2 sin, x2 cos + x1 sin). Contiguous layout (default): x1 is the first
    half of d, x2 the second; interleaved: x1 the even elements, x2 the odd ones, the output
    in the same layout as the input."""
    x, cos, sin = _f64(t["x_in"]), _f64(t["cos"]), _f64(t["sin"])
    c, s = cos[:, :, None, :], sin[:, :, None, :]  # over the heads
    contiguous = host.get("contiguous_layout", True) is not False
    x1, x2 = (x[: len(x) // 2], x[len(x) // 2 :]) if contiguous else (x[0::2], x[1::2])
    y1, y2 = x1 * c - x2 * s, x2 * c + x1 * s
    if contiguous:
        return np.concatenate([y1, y2])
    out = np.empty_like(x)
    out[0::2], out[1::2] = y1, y2
    return out


def rope_hf(t: dict[str, np.ndarray], host: dict[str, object]) -> tuple:
    """HuggingFace rotary embedding of q, k [B, heads, S, D] with cos, sin [(B,) S, D]:
    y = x cos + rotate_half(x) sin, rotate_half(x) = [-x2, x1] (halves of D). Backward (the
    gradient of that linear map, applied to the incoming gradient g = x): g cos + [v2, -v1]
    with v = g sin."""
    cos, sin = _f64(t["cos"]), _f64(t["sin"])
    if cos.ndim == 3:  # per batch: broadcast over the heads
        cos, sin = cos[:, None], sin[:, None]

    def apply(x):
        half = x.shape[-1] // 2
        if host.get("backward", False):
            v = x * sin
            return x * cos + np.concatenate([v[..., half:], -v[..., :half]], axis=-1)
        rot = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
        return x * cos + rot * sin

    return apply(_f64(t["q"])), apply(_f64(t["k"]))


def _tkg_layout(y: np.ndarray, blocks: int, hidden_dim_tp: bool = False) -> np.ndarray:
    """Rows [N, H] laid out as [128, N, H/128], the token-generation norms' documented output:
    with hidden_dim_tp, element h of a row goes to partition h % 128, column h // 128;
    otherwise H is cut into `blocks` blocks (one per logical core that shares the output) and
    element j of block c goes to partition j // (H/128/blocks), column
    c * H/128/blocks + j % (H/128/blocks) -- with one block, partition h // (H/128), column
    h % (H/128)."""
    n, h = y.shape
    if hidden_dim_tp:
        return y.reshape(n, h // 128, 128).transpose(2, 0, 1)
    parts = np.split(y, blocks, axis=1)
    return np.concatenate([p.reshape(n, 128, -1).transpose(1, 0, 2) for p in parts], axis=2)


def rmsnorm_tkg(t: dict[str, np.ndarray], host: dict[str, object], lnc: int = 1) -> np.ndarray:
    """RMSNorm of input [B, S, H] over H (mean of squares over `hidden_actual` elements when
    given), times gamma [1, H], in the [128, B*S, H/128] layout of `_tkg_layout`: one block
    per logical core, one when single_core_forced; shard_on_h changes how the cores split
    the work, not the layout."""
    x = _f64(t["input"])
    b, s, h = x.shape
    n = int(host.get("hidden_actual") or h)
    eps = float(host.get("eps", 1e-6))
    y = x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) / n + eps) * _f64(t["gamma"]).reshape(-1)
    blocks = 1 if host.get("single_core_forced") else lnc
    return _tkg_layout(y.reshape(b * s, h), blocks, bool(host.get("hidden_dim_tp")))


def layernorm_tkg(t: dict[str, np.ndarray], host: dict[str, object], lnc: int = 1) -> np.ndarray:
    """LayerNorm of input [B, S, H] over H: (x - mean) / sqrt(variance + eps) * gamma + beta
    (population variance; beta optional), in the [128, B*S, H/128] layout of `_tkg_layout`
    with one block per logical core."""
    x = _f64(t["input"])
    b, s, h = x.shape
    eps = float(host.get("eps", 1e-6))
    centred = x - x.mean(axis=-1, keepdims=True)
    y = centred / np.sqrt(np.mean(centred * centred, axis=-1, keepdims=True) + eps)
    y = y * _f64(t["gamma"]).reshape(-1)
    if "beta" in t:
        y = y + _f64(t["beta"]).reshape(-1)
    return _tkg_layout(y.reshape(b * s, h), lnc)


def cross_entropy_backward(t: dict[str, np.ndarray], host: dict[str, object]) -> np.ndarray:
    """d loss / d logits = scale * (exp(logits - lse) - onehot(target)), with lse the given
    saved log-sum-exp per position and scale 1/positions for 'mean', 1 for 'sum'."""
    logits = _f64(t["logits_hbm"])
    lse = _f64(t["lse_state_hbm"])[:, None]
    grad = np.exp(logits - lse)
    grad[np.arange(len(grad)), t["targets_hbm"].astype(np.int64)] -= 1.0
    scale = 1.0 / len(grad) if host.get("reduction", "mean") == "mean" else 1.0
    return grad * scale


def attention_bwd(t: dict[str, np.ndarray], host: dict[str, object]) -> tuple:
    """Attention backward from the saved forward state, per batch and head (q, k, v, o, dy are
    [B, H, d, S]; kv heads shared by H / H_kv query heads): P = exp(scale q^T k - lse) (causal:
    zero above the diagonal), dV = P^T dY, dP = dY V^T, D = rowsum(dY * O),
    dS = P * (dP - D), dQ = scale dS K, dK = scale dS^T Q. lse [B, H, 128, S/128] holds query
    position i at [.., i % 128, i // 128]."""
    if host.get("sliding_window") or "sinks_ref" in t or "bound_min" in t:
        _skip("the reference has no sliding window, sinks or sequence packing")
    q, k, v = _f64(t["q_ref"]), _f64(t["k_ref"]), _f64(t["v_ref"])
    o, dy, lse = _f64(t["o_ref"]), _f64(t["dy_ref"]), _f64(t["lse_ref"])
    b, h, d, sq = q.shape
    group = h // k.shape[1]
    scale = host.get("softmax_scale") or 1.0 / np.sqrt(d)
    lse = lse.transpose(0, 1, 3, 2).reshape(b, h, sq)
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    for bi in range(b):
        for hi in range(h):
            kv = hi // group
            qm, km, vm = q[bi, hi].T, k[bi, kv].T, v[bi, kv].T  # [S, d]
            p = np.exp(scale * qm @ km.T - lse[bi, hi][:, None])
            if host.get("use_causal_mask"):
                p = np.tril(p)
            dym, om = dy[bi, hi].T, o[bi, hi].T
            dv[bi, kv] += (p.T @ dym).T
            ds = p * (dym @ vm.T - np.sum(dym * om, axis=1, keepdims=True))
            dq[bi, hi] = (scale * ds @ km).T
            dk[bi, kv] += (scale * ds.T @ qm).T
    return dq, dk, dv


REFERENCES = {
    "attention_bwd": attention_bwd,
    "rmsnorm_quant": rmsnorm_quant,
    "rope": rope,
    "rope_hf": rope_hf,
    "rmsnorm_tkg": rmsnorm_tkg,
    "layernorm_tkg": layernorm_tkg,
    "cross_entropy_backward": cross_entropy_backward,
    "cumsum": cumsum,
    "cascaded_max": cascaded_max,
    "conv1d": conv1d,
    "depthwise_conv1d": depthwise_conv1d,
    "cross_entropy_forward": cross_entropy_forward,
    "elementwise_add": elementwise_add,
    "indexed_flatten": indexed_flatten,
    "output_projection_cte": output_projection_cte,
    "output_projection_tkg": output_projection_tkg,
    "qkv_no_norm": qkv_no_norm,
    "attention_cte": attention_cte,
    "find_nonzero_indices": find_nonzero_indices,
    "find_nonzero_indices_with_count": find_nonzero_indices_with_count,
    "gen_mask_tkg": gen_mask_tkg,
    "quantize_to_mx": quantize_to_mx,
    "router_topk": router_topk,
    "topk_reduce": topk_reduce,
    "tp_broadcast": tp_broadcast,
    "cross_partition_copy": cross_partition_copy,
}
