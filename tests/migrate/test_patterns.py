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
    }


INPUTS = _rng_inputs()
REFERENCES = {
    "swap_blocks": lambda a: _swap(a),
    "pool_sums": lambda a: _pools(a),
    "ramps": _ramps,
    "lower_triangle": lambda a: np.where(np.tril(np.ones((128, 128), bool)), a, -1.0),
    "gather_rows": lambda data, idx: data[idx],
    "even_rows": lambda data: data[0::2],
}
LITERALS = {"swap_blocks": {"blocks": (3, 4)}, "pool_sums": {"k": 2}}


def _specs(kernel: str) -> dict:
    specs = {n: TensorSpec(v.shape, str(v.dtype)) for n, v in INPUTS[kernel].items()}
    return {**specs, **LITERALS.get(kernel, {})}


@pytest.fixture(scope="module")
def migrated():
    return migrate_source(PATTERNS.read_text())


def test_no_grid_is_left_and_no_manual_step(migrated):
    body = migrated.text.split('"""', 2)[2]
    assert "arange" not in body and "mgrid" not in body
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


@pytest.mark.parametrize("kernel", sorted(INPUTS))
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
