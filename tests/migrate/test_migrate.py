"""nkic migrate: Beta 1 kernels rewritten into current NKI, verified by running both."""

from __future__ import annotations

import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from nkic import api
from nkic.cli import cli
from nkic.frontend import TensorSpec
from nkic.migrate import migrate_source, verify

BETA1 = Path(__file__).resolve().parents[1] / "frontend" / "beta1" / "add_tiles.py"

CASES = {
    "add_rows": {"a": TensorSpec((384, 512), "float32"), "b": TensorSpec((384, 512), "float32")},
    "matmul_psum": {
        "lhsT": TensorSpec((384, 128), "bfloat16"),
        "rhs": TensorSpec((384, 256), "bfloat16"),
    },
    "strided_cols": {"a": TensorSpec((128, 512), "float32")},
    "scale_shift": {"a": TensorSpec((128, 512), "float32")},
}


@pytest.fixture(scope="module")
def migrated():
    return migrate_source(BETA1.read_text())


def test_the_migrated_file_uses_current_nki_only(migrated):
    text = migrated.text.split('"""', 2)[2]  # after the module docstring
    for gone in ("neuronxcc", "nl.arange", "par_dim", "np.multiply"):
        assert gone not in text.split("@nki.jit\ndef masked")[0], gone
    assert "nisa.nc_matmul(dst=acc, stationary=s, moving=m)" in text
    assert "nl.load(a[i * 128:i * 128 + 128, 0:512])" in text
    assert "value=nl.add(x, nl.multiply(y, 2.0))" in text


@pytest.mark.parametrize("kernel", sorted(CASES))
def test_each_migration_computes_the_same_bits(migrated, kernel):
    outcome = verify(str(BETA1), migrated.text, kernel, CASES[kernel], "trn2")
    assert outcome.error is None
    assert outcome.identical, outcome.describe()
    assert outcome.latency_ns[0] > 0 and outcome.latency_ns[1] > 0


def test_untouched_code_keeps_its_comments_and_layout():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl  # the language\n"
        "\n"
        "X  =  3   # odd spacing stays\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    # a comment inside\n"
        "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    i_p = nl.arange(128)[:, None]\n"
        "    i_f = nl.arange(64)[None, :]\n"
        "    t = nl.load(a[i_p, i_f])  # load\n"
        "    nl.store(out[i_p, i_f], value=t)\n"
        "    return out\n"
    )
    text = migrate_source(source).text
    assert "import nki.language as nl  # the language\n" in text
    assert "X  =  3   # odd spacing stays\n" in text
    assert "    # a comment inside\n" in text
    assert "    t = nl.load(a[0:128, 0:64])  # load\n" in text
    assert "arange" not in text


def test_what_cannot_be_migrated_is_left_with_a_todo(migrated):
    messages = {t.message.split(":")[0] for t in migrated.todos}
    assert messages == {
        "mask= has no current equivalent",
        "the index grid i_p is used where a slice cannot replace it",
        "the index grid i_f is used where a slice cannot replace it",
    }
    assert "# TODO(nkic migrate): mask= has no current equivalent" in migrated.text
    # a grid with a use left as it was keeps its definition: the file has no undefined name
    masked = migrated.text.split("def masked")[1].split("@nki.jit")[0]
    assert "    i_p = nl.arange(128)[:, None]\n" in masked


def test_grids_that_transpose_become_an_access_pattern(migrated):
    transposed = migrated.text.split("def transposed")[1].split("@nki.jit")[0]
    assert "arange" not in transposed
    assert "t = nl.load(a.ap(pattern=[[1, 128], [a.shape[1], 512]], offset=0))" in transposed


def test_cli_prints_a_diff_writes_with_o_and_verifies(tmp_path):
    kernel = tmp_path / "k.py"
    shutil.copy(BETA1, kernel)
    runner = CliRunner()
    shown = runner.invoke(cli, ["migrate", str(kernel)])
    assert shown.exit_code == 0
    assert "-import neuronxcc.nki as nki\n" in shown.output and "+import nki\n" in shown.output
    assert kernel.read_text() == BETA1.read_text()  # a diff only: the file is untouched
    out = tmp_path / "new.py"
    args = ["--arg", "a=float32[128,512]"]
    res = runner.invoke(cli, ["migrate", str(kernel), "-o", str(out), "-k", "scale_shift", *args])
    assert res.exit_code == 0, res.output
    assert "scale_shift: outputs bit-identical; predicted latency" in res.output
    assert "import neuronxcc" not in out.read_text()
    # a kernel Beta 1 itself rejects cannot be verified: exit 1 with the reason
    res = runner.invoke(cli, ["migrate", str(kernel), "-k", "mixed", *args])
    assert res.exit_code == 1
    assert (
        "mixed: not verified: original: err_unsupported_mixing_basic_advanced_tensor_indexing"
        in res.output
    )
    assert not list(tmp_path.glob(".nkic-migrated-*"))  # the twin file is removed


def test_cli_rejects_what_it_cannot_parse(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n")
    res = CliRunner().invoke(cli, ["migrate", str(bad)])
    assert res.exit_code == 2 and "cannot parse" in res.output


def test_grids_defined_with_an_offset_and_unrecognised_grid_uses():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    row = nl.program_id(0) * 128\n"
        "    ix = row + nl.arange(128)[:, None]\n"
        "    iy = nl.arange(64)[None, :]\n"
        "    t = nl.load(a[ix, iy])\n"
        "    nl.store(out[ix, iy], value=t)\n"
        "    odd = nl.arange(8)[None, :] % 2\n"
        "    return out\n"
    )
    m = migrate_source(source)
    assert "t = nl.load(a[row:row + 128, 0:64])" in m.text
    assert "    # TODO(nkic migrate): an index grid used in a way" in m.text
    assert [t.line for t in m.todos] == [12]


MASKED = Path(__file__).resolve().parents[1] / "frontend" / "beta1" / "masked_tiles.py"

MASK_CASES = {
    "tail_rows": {"a": TensorSpec((300, 96), "float32"), "b": TensorSpec((300, 96), "float32")},
    "tail_both": {"a": TensorSpec((200, 600), "float32")},
    "window": {"a": TensorSpec((128, 64), "float32")},
}


@pytest.fixture(scope="module")
def masked():
    return migrate_source(MASKED.read_text())


def test_masks_become_the_slices_of_tail_tiles(masked):
    text = masked.text
    assert "x = nl.load(a[i * 128:min(i * 128 + 128, N), 0:M])\n" in text
    assert (
        "nl.store(out[i * 128:min(i * 128 + 128, N), j * 256:min(j * 256 + 256, M)], value=y)"
        in text
    )
    assert "t = nl.load(a[0:128, max(0, 16):min(64, 48)])\n" in text
    assert "inside" not in text  # the named mask went with the calls it masked
    # the masks nkic migrate does not turn into slices stay, with a TODO each
    assert [t.line for t in masked.todos] == [71, 72, 73, 84]  # with the grids it reads


@pytest.mark.parametrize("kernel", sorted(MASK_CASES))
def test_each_mask_migration_computes_the_same_bits(masked, kernel):
    outcome = verify(str(MASKED), masked.text, kernel, MASK_CASES[kernel], "trn2")
    assert outcome.error is None
    assert outcome.identical, outcome.describe()


GRIDS = Path(__file__).resolve().parents[1] / "frontend" / "beta1" / "grid_tiles.py"


def test_grid_programs_become_loops_over_the_program_ids():
    source = GRIDS.read_text()
    # without a grid, the kernel is one program: its program ids stay (0 in current NKI too)
    assert "nl.program_id(0)" in migrate_source(source).text
    migrated = migrate_source(source, grid=(3, 2))
    text = migrated.text
    body = text.split('"""', 2)[2]  # after the module docstring
    assert "program_id" not in body and "num_programs" not in body
    assert "    for pid0 in range(3):\n        for pid1 in range(2):\n" in text  # NKI 0.7 loops
    to_03 = migrate_source(source, to="0.3", grid=(3, 2)).text
    assert "    for pid0 in nl.affine_range(3):\n        for pid1 in nl.affine_range(2):\n" in to_03
    assert "out = nl.ndarray((3 * 128, 8)" in text  # num_programs(0) is the grid's size
    args = {"a": TensorSpec((384, 512), "float32"), "b": TensorSpec((384, 512), "float32")}
    outcome = verify(str(GRIDS), text, "add_grid", args, "trn2", grid=(3, 2))
    assert outcome.error is None and outcome.identical, outcome.describe()
    outcome = verify(str(GRIDS), text, "grid_shape", {"a": TensorSpec((128, 8), "float32")},
                     "trn2", grid=(3, 2))  # fmt: skip
    assert outcome.error is None and outcome.identical, outcome.describe()


def test_cli_migrate_with_a_grid(tmp_path):
    out = tmp_path / "new.py"
    args = ["--arg", "a=float32[256,512]", "--arg", "b=float32[256,512]"]
    res = CliRunner().invoke(
        cli, ["migrate", str(GRIDS), "-o", str(out), "-k", "add_grid", "--grid", "2,2", *args]
    )
    assert res.exit_code == 0, res.output
    assert "add_grid: outputs bit-identical" in res.output
    assert "for pid1 in range(2):" in out.read_text()


RESULTS = Path(__file__).resolve().parent / "beta1_results.py"


@pytest.fixture(scope="module")
def results():
    return migrate_source(RESULTS.read_text())


def test_results_written_into_views_annotated_or_accumulated(results):
    text = results.text
    assert results.todos == []
    body = text.split('"""', 2)[2]  # after the module docstring
    assert "neuronxcc" not in body and "par_dim" not in body
    assert "res = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)\n" in text
    assert "    nisa.activation(dst=res[:, 0:256], op=nl.exp, data=x)\n" in text
    # the annotation goes with the value; the module written out stays written out
    assert "    c = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)\n" in text
    assert "    nki.isa.tensor_tensor(dst=c, data1=x, data2=y, op=nl.add)\n" in text
    assert "nisa.tensor_scalar(dst=res[:, 256:512], data=c, op0=nl.multiply, operand0=0.5)" in text
    # PSUM accumulation into a view of a PSUM tensor, in place
    assert "@nki.jit\ndef matmul_views" in text
    assert "            nisa.nc_matmul(dst=acc[:, j, :], stationary=s, moving=m)\n" in text
    # a matmul result assigned into an SBUF view: its own PSUM tile, then copied
    assert (
        "    psum_result0 = nl.ndarray((s.shape[-1], m.shape[-1]), dtype=nl.float32, "
        "buffer=nl.psum)\n"
        "    nisa.nc_matmul(dst=psum_result0, stationary=s, moving=m)\n"
        "    nisa.tensor_copy(dst=prod[...], src=psum_result0)\n"
    ) in text


RESULT_CASES = {
    "into_views": {"a": TensorSpec((128, 256), "float32"), "b": TensorSpec((128, 256), "float32")},
    "matmul_into_sbuf": {
        "lhsT": TensorSpec((128, 128), "bfloat16"),
        "rhs": TensorSpec((128, 512), "bfloat16"),
    },
}


@pytest.mark.parametrize("kernel", sorted(RESULT_CASES))
def test_each_result_migration_computes_the_same_bits(results, kernel):
    outcome = verify(str(RESULTS), results.text, kernel, RESULT_CASES[kernel], "trn2")
    assert outcome.error is None
    assert outcome.identical, outcome.describe()


def test_a_returning_call_it_does_not_rewrite_is_a_manual_step():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.isa as nisa\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    x = nl.load(a)\n"
        "    y = nisa.tensor_reduce(nl.add, x, axis=(0, 1))\n"
        "    z = nisa.iota(x, dtype=nl.int32)\n"
        "    return y\n"
    )
    m = migrate_source(source)
    assert [(t.line, t.message.split(":")[0]) for t in m.todos] == [
        (8, "nisa.tensor_reduce over axis (0, 1)"),
        (9, "nisa.iota returns its result here, which current NKI does not"),
    ]
    assert "    # TODO(nkic migrate): nisa.iota returns its result here" in m.text
    assert "    z = nisa.iota(x, dtype=nl.int32)\n" in m.text  # left as it was
    diag = m.todos[1].diagnostic("k.py")
    assert (diag.code, diag.severity, diag.loc.line, diag.loc.col) == (
        "nkic_migrate_manual_step", "warning", 9, 5,
    )  # fmt: skip


def test_loops_become_range_for_07_and_stay_for_03():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    for i in nl.affine_range(2):\n"
        "        for j in nl.sequential_range(0, 4, 2):\n"
        "            for s in nl.static_range(3):\n"
        "                pass\n"
        "    for i in nl.affine_range(4, multi_buffer=2):\n"
        "        pass\n"
    )
    text = migrate_source(source).text
    assert "for i in range(2):" in text and "for j in range(0, 4, 2):" in text
    assert "for s in range(3):" in text
    assert "nl.affine_range(4, multi_buffer=2)" in text  # a keyword range stays
    assert migrate_source(source, to="0.3").text.count("nl.affine_range(") == 2
    with pytest.raises(ValueError, match="supported: 0.7, 0.3"):
        migrate_source(source, to="0.5")


def test_compiler_directives_and_direct_allocation_dropped():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.compiler as ncc\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    t = nl.ndarray((128, 512), dtype=a.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=0))\n"
        "    for i in nl.sequential_range(2, directives=ncc.no_reorder()):\n"
        "        pass\n"
    )
    m = migrate_source(source)
    assert "import nki.compiler as ncc\n" in m.text
    assert "    for i in range(2):\n" in m.text  # the scheduling hint has no equivalent
    assert "    t = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)\n" in m.text
    assert m.todos == []


def test_simulate_kernel_calls_become_nki_simulate():
    source = (
        "import neuronxcc.nki as nki\n"
        "simulate_kernel = nki.simulate_kernel\n"
        "\n"
        "def run(k, a, b):\n"
        "    x = simulate_kernel(k, a, b)\n"
        "    return nki.simulate_kernel(k, x)\n"
    )
    text = migrate_source(source).text
    assert "simulate_kernel" not in text
    assert "    x = nki.simulate(k)(a, b)\n" in text
    assert "    return nki.simulate(k)(x)\n" in text


def test_float32_bounds_returned_hbm_and_entry_point_aliases():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "nki_jit = nki.trace\n"
        "\n"
        "@nki_jit\n"
        "def k(a):\n"
        "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.hbm)\n"
        "    scratch = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.hbm)\n"
        "    t = nl.load(a)\n"
        "    low = nl.fp32.min\n"
        "    high = nl.float32.max\n"
        "    nl.store(out, value=t)\n"
        "    return out\n"
    )
    text = migrate_source(source).text
    assert "nki_jit = nki.jit\n" in text
    # only the returned tensor moves to shared_hbm, as current NKI returns
    assert "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n" in text
    assert "    scratch = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.hbm)\n" in text
    assert "    low = -3.4028234663852886e38\n" in text
    assert "    high = 3.4028234663852886e38\n" in text
    assert float("-3.4028234663852886e38") == float(np.finfo(np.float32).min)


def test_dma_transpose_result_in_sbuf_and_axes_permute_its_shape():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.isa as nisa\n"
        "\n"
        "@nki.jit\n"
        "def k(a, b, order):\n"
        "    t = nisa.dma_transpose(a[:, :])\n"
        "    u = nisa.dma_transpose(b, axes=(2, 1, 0))\n"
        "    v = nisa.dma_transpose(b, axes=order)\n"
    )
    m = migrate_source(source)
    text = m.text.replace("nki.language", "nl")
    assert (
        "    t = nl.ndarray((a[:, :].shape[1], a[:, :].shape[0]), dtype=a[:, :].dtype, "
        "buffer=nl.sbuf)\n    nisa.dma_transpose(dst=t, src=a[:, :])\n"
    ) in text
    assert (
        "    u = nl.ndarray((b.shape[2], b.shape[1], b.shape[0]), dtype=b.dtype, "
        "buffer=nl.sbuf)\n    nisa.dma_transpose(dst=u, src=b, axes=(2, 1, 0))\n"
    ) in text
    assert [(t.line, t.message.split(":")[0]) for t in m.todos] == [
        (8, "nisa.dma_transpose with axes= not written as numbers")
    ]


def test_block_dimensions_before_the_partition_dimension_move_after_it():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    acc = nl.zeros((4, nl.par_dim(128), 512), dtype=nl.float32)\n"
        "    col = nl.zeros((nl.par_dim(128), 4, 512), dtype=nl.float32)\n"
        "    acc[2] = col[:, 1, :]\n"
    )
    m = migrate_source(source)
    # the partition dimension first stays as it is; a block dimension before it becomes a
    # free dimension after it, and its index moves with it
    assert "    col = nl.zeros((128, 4, 512), dtype=nl.float32)\n" in m.text
    assert "    acc = nl.zeros((128, 4, 512), dtype=nl.float32)\n" in m.text
    assert "    acc[:, 2, :] = col[:, 1, :]\n" in m.text
    assert m.todos == []


def test_in_place_view_updates_column_loads_and_broadcast_methods():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.isa as nisa\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a, b, w):\n"
        "    acc = nl.zeros((128, 512), dtype=nl.float32)\n"
        "    x = nl.load(a[0:128, 0:512])\n"
        "    col = nl.load(w[0:128, 3])\n"
        "    row = nl.load(b[0:1, 0:512])\n"
        "    wide = row.broadcast_to((128, 512))\n"
        "    acc[0:128, 0:512] += x\n"
        "    acc[0:128, 0:512] += 1.0\n"
    )
    text = migrate_source(source).text
    assert "    col = nl.load(w[0:128, 3:3 + 1])\n" in text  # Beta 1 loaded a column
    assert "    x = nl.load(a[0:128, 0:512])\n" in text
    assert "    wide = nl.broadcast_to(row, (128, 512))\n" in text
    assert (
        "    nisa.tensor_tensor(dst=acc[0:128, 0:512], data1=acc[0:128, 0:512], data2=x, "
        "op=nl.add)\n"
    ) in text
    assert "    acc[0:128, 0:512] += 1.0\n" in text  # not a tile: left as it was


def test_partition_reduce_result_is_one_row():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.isa as nisa\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    x = nl.load(a)\n"
        "    r = nisa.tensor_partition_reduce(np.add, x)\n"
    ).replace("np.add", "nl.add")
    text = migrate_source(source).text
    assert "    r = nl.ndarray((1,) + x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)\n" in text
    assert "    nisa.tensor_partition_reduce(dst=r, op=nl.add, data=x)\n" in text


def test_a_dynamic_slice_last_index_is_not_a_column():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a, i):\n"
        "    x = nl.load(a[0:128, nl.ds(i * 64, 64)])\n"
    )
    assert "    x = nl.load(a[0:128, nl.ds(i * 64, 64)])\n" in migrate_source(source).text


HELPER_KERNEL = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

from scales import FACTOR


@nki.jit
def scaled(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, value=nl.multiply(t, FACTOR))
    return out
"""


def test_verify_compiles_the_migrated_source_beside_the_original_without_writing_it(
    tmp_path, monkeypatch
):
    """The migrated kernel imports its sibling module as the original does, and the kernel's
    folder is left exactly as it was (nothing is created there, even for a moment)."""
    import builtins
    import os

    (tmp_path / "scales.py").write_text("FACTOR = 3.0\n")
    kernel = tmp_path / "k.py"
    kernel.write_text(HELPER_KERNEL)
    before = sorted(p.name for p in tmp_path.iterdir())
    migrated = migrate_source(HELPER_KERNEL)
    assert "from scales import FACTOR" in migrated.text
    created = []
    real_open, real_os_open = builtins.open, os.open

    def spy_open(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+"):
            created.append(str(file))
        return real_open(file, mode, *args, **kwargs)

    def spy_os_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            created.append(str(path))
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(os, "open", spy_os_open)
    args = {"a": TensorSpec((128, 64), "float32")}
    outcome = verify(str(kernel), migrated.text, "scaled", args, "trn2")
    monkeypatch.undo()
    assert outcome.identical, outcome
    assert not [f for f in created if f.startswith(str(tmp_path))], created
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_block_tensors_read_in_closures_numpy_dtypes_and_loop_hints():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.isa as nisa\n"
        "import neuronxcc.nki.language as nl\n"
        "import numpy as np\n"
        "\n"
        "@nki.jit\n"
        "def k(a, wide):\n"
        "    acc_type = np.dtype(np.float32) if wide else a.dtype\n"
        "    parts = nl.ndarray((4, nl.par_dim(128), 64), dtype=acc_type, buffer=nl.sbuf)\n"
        "    def fill(i):\n"
        "        parts[i] = nl.load(a[i])\n"
        "        s = nisa.tensor_reduce(np.sum, parts[i], axis=1)\n"
        "        c = nisa.activation(np.copy, parts[i])\n"
        "    for i in nl.affine_range(4, precise_schedule=True):\n"
        "        fill(i)\n"
        "        r = nl.loop_reduce(parts[i], np.add, loop_indices=[i])\n"
    )
    m = migrate_source(source)
    text = m.text.replace("nki.language", "nl").replace("nki.isa", "nisa")
    assert "acc_type = nl.float32 if wide else a.dtype" in text
    # the blocks moved after the partition dimension, also where a closure reads them
    assert "parts = nl.ndarray((128, 4, 64), dtype=acc_type, buffer=nl.sbuf)" in text
    # a load into a view: one DMA into it
    assert "        nisa.dma_copy(dst=parts[:, i, :], src=a[i])\n" in text
    assert "op=nl.add, data=parts[:, i, :], axis=1)" in text
    assert "nisa.activation(dst=c, op=nl.copy, data=parts[:, i, :])" in text
    assert "    for i in range(4):\n" in text
    assert [t.message.split(" has ")[0] for t in m.todos] == ["nl.loop_reduce"]


def test_a_helper_returning_a_direct_allocation_returns_the_buffer():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "sb_mod = nki.compiler.sbuf.mod_alloc\n"
        "\n"
        "class Placer:\n"
        "    def __init__(self):\n"
        "        self.offset = 0\n"
        "    def place(self, size):\n"
        "        addr = self.offset\n"
        "        self.offset += size\n"
        "        return sb_mod(base_addr=addr, num_free_tiles=(1, ))\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    t = nl.ndarray((128, 512), dtype=a.dtype, buffer=Placer().place(2048))\n"
    )
    m = migrate_source(source)
    assert "        return nl.sbuf\n" in m.text
    assert "sb_mod" not in m.text and "mod_alloc" not in m.text
    assert m.todos == []


def test_broadcasts_stay_calls_in_files_without_4_byte_integers():
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    row = nl.load(a)\n"
        "    # every partition\n"
        "    rows = nl.broadcast_to(row, (128, 64))\n"
    )
    assert "    # every partition\n    rows = nl.broadcast_to(row, (128, 64))\n" in (
        migrate_source(source).text
    )
    wide = migrate_source(source.replace("(a):", "(a):  # int32 rows"))
    # a comment above the statement stays above the `if` that replaces it
    assert (
        "    # every partition\n    if row.dtype in (nl.int32, nl.uint32) and row.shape[0] == 1:\n"
    ) in wide.text.replace("nki.language", "nl")
    assert "    else:\n        rows = nl.broadcast_to(row, (128, 64))\n" in wide.text.replace(
        "nki.language", "nl"
    )


def test_a_failing_original_is_reported_by_its_first_error_not_an_earlier_warning(tmp_path):
    # a kernel whose first diagnostic is a deprecation warning and whose failure is an
    # undefined name further down: the verification names the error
    kernel = tmp_path / "k.py"
    kernel.write_text(
        "import nki.language as nl\n"
        "from torch_neuronx import nki_jit\n"
        "\n"
        "@nki_jit\n"
        "def twice(a):\n"
        "    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    for k in nl.affine_range(2):\n"
        "        rows = slice(k * 128, k * 128 + 128)\n"
        "        t = nl.load(a[rows, 0:64])\n"
        "        nl.store(out[rows, cols], value=nl.add(t, t))\n"
        "    return out\n"
    )
    res = CliRunner().invoke(
        cli, ["migrate", str(kernel), "-k", "twice", "--arg", "a=float32[256,64]"]
    )
    assert res.exit_code == 1
    assert "twice: not verified: original: err_undefined_name: name 'cols'" in res.output


LOADS_INTO_VIEWS = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def halves(a):
    # float32 rows loaded into the blocks of a bfloat16 tile (the load casts), then summed
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.bfloat16, buffer=nl.sbuf)
    for i in nl.affine_range(2):
        t[i] = nl.load(a[i * 128:(i + 1) * 128, 0:512])
    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
    acc[...] = nl.load(a[0:128, 0:512])
    w = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    w[...] = nl.load(a[128:256, 0:512], dtype=nl.bfloat16)
    s = nl.add(nl.add(t[0], t[1]), nl.add(nl.copy(acc), w))
    nl.store(out, value=s)
    return out
"""


def test_a_load_into_a_view_is_one_dma_into_it(tmp_path):
    path = tmp_path / "loads.py"
    path.write_text(LOADS_INTO_VIEWS)
    m = migrate_source(LOADS_INTO_VIEWS)
    text = m.text.replace("nki.isa.", "nisa.")
    # the DMA writes the view (casting float32 to bfloat16) instead of a load and a copy
    assert "        nisa.dma_copy(dst=t[:, i, :], src=a[i * 128:(i + 1) * 128, 0:512])\n" in text
    # a PSUM view and a load with dtype= stay loads
    assert "    acc[...] = nl.load(a[0:128, 0:512])\n" in text
    assert "    w[...] = nl.load(a[128:256, 0:512], dtype=nl.bfloat16)\n" in text
    spec = {"a": TensorSpec((256, 512), "float32")}
    outcome = verify(str(path), m.text, "halves", spec, "trn2")
    assert outcome.identical, outcome.describe()
    # two instructions fewer: the two blocks' tile copies
    twin = tmp_path / "loads_migrated.py"
    twin.write_text(m.text)
    a = np.random.default_rng(1).standard_normal((256, 512), dtype=np.float32)
    counts = []
    for file in (path, twin):
        compiled = api.compile(str(file), kernel="halves", **spec)
        out = compiled(a)
        counts.append(compiled.profile["instructions"])
        bf = a.astype(ml_dtypes.bfloat16).astype(np.float32)
        expected = (bf[:128] + bf[128:]) + (a[:128] + bf[128:])
        np.testing.assert_allclose(out, expected, rtol=2**-7, atol=2**-7)
    assert counts[1] == counts[0] - 2
