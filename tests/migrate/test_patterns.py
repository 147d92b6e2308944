"""nkic migrate on index grids that no slice can replace: access patterns (`.ap()`), `iota` /
`affine_select` patterns and indirect DMA with a vector offset. Each migrated kernel computes
the same bits as its Beta 1 original, and matches an independent numpy reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nkic import api
from nkic.frontend import TensorSpec
from nkic.frontend.args import ArgExpr
from nkic.migrate import migrate_source, verify

PATTERNS = Path(__file__).resolve().parent / "beta1_patterns.py"


def _swap(a):
    rows = a.shape[0]
    return a.reshape(rows, 3, 4).transpose(0, 2, 1).reshape(rows, 12)


def _pools(a):
    c, h, w = a.shape
    return a.reshape(c, h // 2, 2, w // 2, 2).sum(axis=(2, 4))


def _ramps():
    a = (7 - 2 * np.arange(256, dtype=np.float32))[None, :]
    b = (3 * np.arange(128, dtype=np.float32) + 1)[:, None]
    c = (np.arange(64)[:, None] * 32 + np.arange(32)[None, :] - 100).astype(np.float32)
    return a, b, c


def _bounds(ids):
    """[start, end) of each element's run of equal ids; id 0 (padding) is [n, -1]."""
    n = ids.shape[1]
    out = np.zeros((1, 2, n), ids.dtype)
    for j, v in enumerate(ids[0]):
        if v == 0:
            out[0, :, j] = (n, -1)
            continue
        start, end = j, j + 1
        while start > 0 and ids[0, start - 1] == v:
            start -= 1
        while end < n and ids[0, end] == v:
            end += 1
        out[0, :, j] = (start, end)
    return out


def _rng_inputs():
    rng = np.random.default_rng(7)
    return {
        "swap_blocks": {"a": rng.standard_normal((8, 12)).astype(np.float32)},
        "pool_sums": {"a": rng.integers(-8, 8, (4, 6, 8)).astype(np.float32)},
        "ramps": {},
        "lower_triangle": {"a": rng.standard_normal((128, 128)).astype(np.float32)},
        "gather_rows": {
            "data": rng.standard_normal((100, 64)).astype(np.float32),
            "idx": rng.integers(0, 100, 32).astype(np.int32),
        },
        "even_rows": {"data": rng.standard_normal((128, 256)).astype(np.float32)},
        "block_sums": {"a": rng.integers(-50, 50, (4, 128, 64)).astype(np.float32)},
        "allocated_scale": {"a": rng.standard_normal((128, 512)).astype(np.float32)},
        "row_pair_max": {"a": rng.standard_normal((200, 64)).astype(np.float32)},
        "tail_copy": {"a": rng.standard_normal((200, 64)).astype(np.float32)},
        "window_max": {"a": rng.standard_normal((200, 64)).astype(np.float32)},
        "scatter_add": {"a": rng.standard_normal((64, 512)).astype(np.float32)},
        "segment_bounds": {"ids": np.array([[0, 1, 1, 2, 2, 2, 0, 3, 3] * 4], np.int32)},
        "scaled_bias": {
            "a": rng.standard_normal((128, 512)).astype(np.float32),
            "row_bias": rng.standard_normal((128, 1)).astype(np.float32),
            "col_scale": rng.standard_normal((1, 512)).astype(np.float32),
        },
        "column_ramp": {},
        "centered_product": {
            "a": rng.integers(-4, 4, (128, 128)).astype(np.float32),
            "b": rng.integers(-4, 4, (128, 256)).astype(np.float32),
        },
        "products_in_psum": {
            "a": rng.integers(-4, 4, (128, 128)).astype(np.float32),
            "b": rng.integers(-4, 4, (128, 256)).astype(np.float32),
        },
        "blend_pairs": {"a": rng.integers(-64, 64, (128, 256)).astype(np.float32)},
        "scaled_swap": {"a": rng.standard_normal((128, 12)).astype(np.float32)},
        "identity_transpose": {"a": rng.integers(-8, 8, (128, 128)).astype(np.float32)},
        "identity_rows": {"a": rng.standard_normal((128, 128)).astype(np.float32)},
        "transposed_load": {"a": rng.standard_normal((256, 64)).astype(np.float32)},
        "row_everywhere": {"a": rng.integers(-(2**31), 2**31 - 1, (1, 64)).astype(np.int32)},
        "gathered_transpose": {
            "src": rng.integers(0, 60000, (64, 4, 32)).astype(np.uint16),
            "idx": rng.integers(0, 64, (16, 1)).astype(np.uint32),
        },
    }


INPUTS = _rng_inputs()
REFERENCES = {
    "swap_blocks": lambda a: _swap(a),
    "pool_sums": lambda a: _pools(a),
    "ramps": _ramps,
    "lower_triangle": lambda a: np.where(np.tril(np.ones((128, 128), bool)), a, -1.0),
    "gather_rows": lambda data, idx: data[idx],
    "even_rows": lambda data: data[0::2],
    "block_sums": lambda a: a.sum(axis=0),
    "allocated_scale": lambda a: 2 * a,
    "row_pair_max": lambda a: np.maximum(a[:-1], a[1:]),
    "tail_copy": lambda a: a,
    "window_max": lambda a: np.maximum(np.maximum(a[:-2], a[1:-1]), a[2:]),
    "scatter_add": lambda a: np.insert(a + 1, range(1, 65), 1, axis=0),
    "segment_bounds": lambda ids: _bounds(ids),
    "scaled_bias": lambda a, row_bias, col_scale: (a + row_bias) * col_scale,
    "column_ramp": lambda: np.tile(np.arange(3, dtype=np.int32) * 5 + 1, (8, 1)),
    "products_in_psum": lambda a, b: a.T @ b,
    "centered_product": lambda a, b: (a - a.max(axis=1, keepdims=True)) @ b,
    "blend_pairs": lambda a: 3 * 0.5 * a[:, 0::2] + 0.5 * a[:, 1::2],
    "scaled_swap": lambda a: 2 * _swap(a),
    "identity_transpose": lambda a: a.T,
    "identity_rows": lambda a: a * 2 + np.eye(128, dtype=np.float32),
    "transposed_load": lambda a: a.T,
    "row_everywhere": lambda a: np.broadcast_to(a, (128, 64)),
    "gathered_transpose": lambda src, idx: src[idx[:, 0]].transpose(2, 1, 0),
}
#: kernels the Beta 1 frontend of nkic rejects (grids that repeat an axis, a masked load
#: assigned to a tile, dst_rmw_op): checked against numpy only
BETA1_UNSUPPORTED = {"row_pair_max", "tail_copy", "scatter_add"}
LITERALS = {
    "swap_blocks": {"blocks": (3, 4)},
    "pool_sums": {"k": 2},
    "blend_pairs": {"weight": 0.5},
}


def _specs(kernel: str) -> dict:
    specs = {n: TensorSpec(v.shape, str(v.dtype)) for n, v in INPUTS[kernel].items()}
    return {**specs, **LITERALS.get(kernel, {})}


@pytest.fixture(scope="module")
def migrated():
    return migrate_source(PATTERNS.read_text())


def test_no_grid_is_left_and_no_manual_step(migrated):
    body = migrated.text.split('"""', 2)[2]
    assert "arange" not in body and "mgrid" not in body and "par_dim" not in body
    assert migrated.todos == []
    text = migrated.text
    assert (
        "u.ap(pattern=[[u.shape[1], rows], [1, n1], [n1, n2]], offset=0)[...] = "
        "nl.copy(t.ap(pattern=[[t.shape[1], rows], [n2, n1], [1, n2]], offset=0))"
    ) in text
    # the reduced axes of the window sums listed last
    assert "[k, w // k], [t.shape[2], k], [1, k]], offset=0), axis=[3, 4])" in text
    assert "nisa.iota(dst=a, pattern=[[-2, 256]], offset=7, channel_multiplier=0)" in text
    assert "nisa.iota(dst=c, pattern=[[1, 32]], offset=-100, channel_multiplier=32)" in text
    assert (
        "nisa.affine_select(dst=low, pattern=[[1, 128]], channel_multiplier=-1, "
        "on_true_tile=t, on_false_value=-1.0, cmp_op=nl.less_equal, offset=0)"
    ) in text
    assert "rows = nl.load(idx.ap(pattern=[[1, n], [1, 1]], offset=0))" in text
    assert "vector_offset=idx, indirect_dim=0)" in text
    # block dimensions: the partition dimension first, the blocks indexed as a free dimension
    assert "parts = nl.ndarray((p, n, f), dtype=a.dtype, buffer=nl.sbuf)" in text
    assert "nisa.dma_copy(dst=parts[:, i, :], src=a[i])" in text  # one DMA into the view
    assert "acc[...] = nl.add(acc, parts[0:p, i, 0:f])" in text
    # direct allocation dropped: nkic places the tiles
    assert "sb_mod" not in text and "mod_alloc" not in text
    assert "t = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)" in text
    # masks: the tail tile's rows, in slices and in access patterns' sizes
    assert (
        "t = nl.load(a.ap(pattern=[[a.shape[1], min(128, n - 1 - (i * 128))], [a.shape[1], 2], "
        "[1, m]], offset=(i * 128) * a.shape[1]))"
    ) in text
    assert (
        "nisa.dma_copy(dst=t[0:min(128, n - (i * 128)), 0:m], "
        "src=a[i * 128:min(i * 128 + 128, n), 0:m])"
    ) in text
    assert "value=t[0:min(128, n - (i * 128)), 0:m])" in text
    # masked results read under other masks keep their full shape; each reader slices them
    assert text.count("t = nl.ndarray((128, 3, m), dtype=a.dtype, buffer=nl.sbuf)") == 1
    assert "nisa.dma_copy(dst=t[0:min(128, n - 2 - (i * 128)), 0:3, 0:m], src=a.ap(" in text
    assert "mx = nl.ndarray((128, m), dtype=t.dtype, buffer=nl.sbuf)" in text
    assert "mx[0:min(128, n - (i * 128)), 0:m] = nl.max(t.ap(" in text
    assert "value=mx[0:min(128, n - 2 - (i * 128)), 0:m])" in text
    # a read-modify-write DMA: dma_compute with the destination as the first source
    assert "nisa.dma_compute(dst=out.ap(" in text and "reduce_op=nl.add)" in text
    assert "bounds = nl.ndarray((t.shape[0], 2, t.shape[1]), dtype=t.dtype, buffer=nl.sbuf)" in text
    # one element set at any partition: a tile of its own, copied into place by DMA
    assert (
        "            element0 = nl.ndarray((1, 1), dtype=t.dtype, buffer=nl.sbuf)\n"
        "            nisa.memset(dst=element0, value=j * 5 + 1)\n"
        "            nisa.dma_copy(dst=t[i, j], src=element0)\n"
    ) in text
    # a matmul assigned to a view of a float32 PSUM tile writes it directly
    assert (
        "nisa.nc_matmul(dst=acc[:, nl.ds(j * 128, 128)], stationary=x, "
        "moving=y[:, nl.ds(j * 128, 128)], accumulate=False)"
    ) in text
    # a row reduction broadcast against its tile; nl.matmul's implicit transpose made explicit
    assert "centered = nl.subtract(x, top.broadcast(1, x.shape[1]))" in text
    assert "product = nl.matmul(nl.copy(nl.transpose(centered)), y, transpose_x=True)" in text
    assert "nl.store(out, value=nl.copy(product))" in text
    # Beta 1's operators on views and access patterns of tiles: nl calls
    assert (
        "u[0:128, 0:128] = nl.add(nl.multiply(3 * weight, t[0:128, 0:255:2]), "
        "nl.multiply(weight, t[0:128, 1:1 + 255:2]))"
    ) in text
    assert "[...] = nl.multiply(2.0, t.ap(pattern=" in text
    # an identity in shared HBM (Beta 1) is an SBUF tile in current NKI: copied, not loaded
    assert "eye = nl.shared_identity_matrix(n=128, dtype=a.dtype)" in text
    assert "ones[...] = nl.copy(eye)" in text
    assert "ones = nl.copy(eye, dtype=a.dtype)" in text
    # a transposing load: the DMA transpose for 2-byte dtypes, else a transposing pattern
    assert (
        "t = (nl.load_transpose2d(a) if a.dtype in (nl.bfloat16, nl.float16) "
        "else nl.load(a.ap(pattern=[[1, a.shape[1]], [a.shape[1], a.shape[0]]], offset=0)))"
    ) in text
    # a DMA transpose with axes=: the destination has the permuted shape of its source
    assert (
        "    flipped = nl.ndarray((transposed_src0.shape[2], transposed_src0.shape[1], "
        "transposed_src0.shape[0]), dtype=transposed_src0.dtype, buffer=nl.sbuf)\n"
        "    nisa.dma_transpose(dst=flipped, src=transposed_src0, axes=(2, 1, 0))\n"
    ) in text
    # a one-partition int32 tile copied to every partition by DMA (the Tensor engine's
    # broadcast is exact up to 16 bits); other dtypes keep nl.broadcast_to
    assert (
        "    if row.dtype in (nl.int32, nl.uint32) and row.shape[0] == 1:\n"
        "        rows = nl.ndarray((128, 64), dtype=row.dtype, buffer=nl.sbuf)\n"
        "        for partition0 in range(128):\n"
        "            nisa.dma_copy(dst=rows[partition0:partition0 + 1, 0:64], src=row[0:1, 0:64])\n"
        "    else:\n"
        "        rows = nl.broadcast_to(row, shape=(128, 64))\n"
    ) in text
    # implicit broadcasting made explicit where both shapes are written as numbers
    assert (
        "y = nl.multiply(nl.add(x, b.broadcast(1, 512)), nl.broadcast_to(s, shape=(128, 512)))"
    ) in text


@pytest.mark.parametrize("kernel", sorted(set(INPUTS) - BETA1_UNSUPPORTED))
def test_the_migrated_kernel_computes_the_originals_bits(migrated, kernel):
    outcome = verify(str(PATTERNS), migrated.text, kernel, _specs(kernel), "trn2")
    assert outcome.error is None, outcome.describe()
    assert outcome.identical, outcome.describe()


@pytest.mark.parametrize("kernel", sorted(INPUTS))
def test_the_migrated_kernel_matches_numpy(migrated, kernel, tmp_path):
    path = tmp_path / "migrated.py"
    path.write_text(migrated.text)
    compiled = api.compile(str(path), kernel=kernel, target="trn2", **_specs(kernel))
    outs = compiled(**INPUTS[kernel])
    outs = outs if isinstance(outs, tuple) else (outs,)
    want = REFERENCES[kernel](**INPUTS[kernel])
    want = want if isinstance(want, tuple) else (want,)
    assert len(outs) == len(want)
    for got, ref in zip(outs, want):
        np.testing.assert_array_equal(got, ref.astype(got.dtype))


def test_comments_above_a_removed_grid_stay():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    # EXAMPLE_BEGIN: the grids\n"
        "    i_p = nl.arange(128)[:, None]\n"
        "    i_f = nl.arange(64)[None, :]\n"
        "    t = nl.load(a[i_p, i_f])\n"
        "    nl.store(out[i_p, i_f], value=t)\n"
        "    # EXAMPLE_END\n"
        "    i_q = nl.arange(128)[:, None]\n"
        "    return out\n"
    )
    text = migrate_source(source).text
    assert "    # EXAMPLE_BEGIN: the grids\n    t = nl.load(a[0:128, 0:64])\n" in text
    assert "    # EXAMPLE_END\n    return out\n" in text
    assert "arange" not in text


ARGUMENTS = Path(__file__).resolve().parent / "beta1_arguments.py"


def test_arguments_current_nki_spells_differently():
    migrated = migrate_source(ARGUMENTS.read_text())
    assert migrated.todos == []
    assert "op0=nl.add, operand0=2.0, op1=nl.maximum, operand1=0.5)" in migrated.text
    spec = TensorSpec((128, 64), "float32")
    outcome = verify(str(ARGUMENTS), migrated.text, "shifted_max", {"a": spec}, "trn2")
    assert outcome.identical, outcome.describe()
    # Beta 1 took numpy functions as operators; the migrated kernel is given the nl operator
    args = {"a": spec, "b": spec, "op": ArgExpr("np.greater_equal")}
    outcome = verify(str(ARGUMENTS), migrated.text, "compared", args, "trn2")
    assert outcome.identical, outcome.describe()


def test_numpy_scalars_and_max_become_numbers_and_maximum_in_the_migrated_run(tmp_path):
    migrated = migrate_source(ARGUMENTS.read_text())
    path = tmp_path / "migrated.py"
    path.write_text(migrated.text)
    a = np.random.default_rng(4).standard_normal((128, 64)).astype(np.float32)
    compiled = api.compile(str(path), kernel="shifted_max", target="trn2", a=TensorSpec(a.shape))
    np.testing.assert_array_equal(compiled(a=a), np.maximum(a + np.float32(2), np.float32(0.5)))


def test_perf_mode_strings_become_the_enum_member():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.isa as nisa\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a, b):\n"
        '    c = nisa.nc_matmul(a, b, perf_mode="double_row_gen3")\n'
        "    return c\n"
    )
    text = migrate_source(source).text
    assert (
        "    c = nl.ndarray((a.shape[-1], b.shape[-1]), dtype=nl.float32, buffer=nl.psum)\n"
        "    nisa.nc_matmul(dst=c, stationary=a, moving=b, "
        "perf_mode=nisa.matmul_perf_mode.double_row)\n"
    ) in text


def test_a_blocked_tensor_read_whole_keeps_its_block_dimensions_with_a_todo():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    out = nl.ndarray((2, nl.par_dim(128), 64), dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    t = nl.ndarray((2, nl.par_dim(128), 64), dtype=a.dtype, buffer=nl.sbuf)\n"
        "    t[0] = nl.load(a[0])\n"
        "    helper(t)\n"
        "    return out\n"
    )
    m = migrate_source(source)
    # the HBM output keeps its layout; the SBUF tile passed whole is left to the user
    assert "out = nl.ndarray((2, 128, 64), dtype=a.dtype, buffer=nl.shared_hbm)" in m.text
    assert "t = nl.ndarray((2, nl.par_dim(128), 64)" in m.text
    assert [t.message.split(":")[0] for t in m.todos] == ["block dimensions before nl.par_dim"]


def test_a_mask_joined_with_and_slices_like_one_joined_with_ampersand():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.isa as nisa\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    ix, iy = nl.mgrid[0:128, 0:512]\n"
        "    t = nl.load(a)\n"
        "    m = nisa.max8(src=t[ix, iy], mask=(ix < 64 and iy < 256))\n"
        "    return m\n"
    )
    m = migrate_source(source)
    assert m.todos == []
    assert "nisa.max8(dst=m, src=t[0:min(128, 64), 0:min(512, 256)])" in m.text


def test_a_result_shaped_by_its_annotation():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.isa as nisa\n"
        "import neuronxcc.nki.language as nl\n"
        "from neuronxcc.nki.typing import tensor\n"
        "\n"
        "@nki.jit\n"
        "def k(src, idx):\n"
        "    g: tensor[128, 4, 16] = nisa.local_gather(src, idx, 4, 64)\n"
        "    h = nisa.local_gather(src, idx, 4, 64)\n"
        "    return g\n"
    )
    m = migrate_source(source)
    assert (
        "    g = nl.ndarray((128, 4, 16), dtype=src.dtype, buffer=nl.sbuf)\n"
        "    nisa.local_gather(dst=g, src_buffer=src, index=idx, num_elem_per_idx=4, "
        "num_valid_indices=64)\n"
    ) in m.text
    # without an annotation the result's shape is not known: left to the user
    assert [t.message.split(":")[0] for t in m.todos] == [
        "nisa.local_gather without a shape annotation"
    ]


def test_a_two_byte_transposed_load_stays_a_dma_transpose(migrated):
    spec = {"a": TensorSpec((256, 64), "bfloat16")}
    outcome = verify(str(PATTERNS), migrated.text, "transposed_load", spec, "trn2")
    assert outcome.identical, outcome.describe()
    assert outcome.latency_ns[0] == outcome.latency_ns[1]  # the same instruction


def test_index_inputs_are_in_range_when_every_tensor_is_an_integer_one(migrated):
    # seeded inputs: `idx` drawn from [0, 64), the rows of the (uint16) `src`, not [0, 128)
    specs = {"src": TensorSpec((64, 4, 32), "uint16"), "idx": TensorSpec((16, 1), "uint32")}
    outcome = verify(str(PATTERNS), migrated.text, "gathered_transpose", specs, "trn2")
    assert outcome.error is None, outcome.describe()
    assert outcome.identical, outcome.describe()


LAID_OUT = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa


@nki.jit
def exp_rows(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    y = nisa.activation(
        nl.exp,
        t,  # the loaded tile
        dtype=nl.float32
    )
    i_p, i_f = nl.mgrid[0:128, 0:512]
    nl.store(
        out[i_p, i_f],
        value=y[i_p, i_f],
        mask=(i_p < 64),  # the first rows
    )
    return out
"""


def test_calls_written_over_several_lines_keep_their_layout_and_comments(tmp_path):
    migrated = migrate_source(LAID_OUT)
    assert (
        "    y = nl.ndarray(t.shape, dtype=nl.float32, buffer=nl.sbuf)\n"
        "    nisa.activation(\n"
        "        dst=y,\n"
        "        op=nl.exp,\n"
        "        data=t,  # the loaded tile\n"
        "    )\n"
        "    nl.store(\n"
        "        out[0:min(128, 64), 0:512],\n"
        "        value=y[0:min(128, 64), 0:512],\n"
        "    )\n"
    ) in migrated.text
    path = tmp_path / "laid_out.py"
    path.write_text(LAID_OUT)
    a = np.random.default_rng(3).standard_normal((128, 512)).astype(np.float32)
    outcome = verify(
        str(path), migrated.text, "exp_rows", {"a": TensorSpec(a.shape, "float32")}, "trn2"
    )
    assert outcome.identical, outcome.describe()
    new = tmp_path / "laid_out_v3.py"
    new.write_text(migrated.text)
    compiled = api.compile(
        str(new), kernel="exp_rows", target="trn2", a=TensorSpec(a.shape, "float32")
    )
    got = compiled(a=a)
    np.testing.assert_allclose(got[:64], np.exp(a[:64]), rtol=1e-5)
