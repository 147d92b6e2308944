"""nkic migrate: Beta 1 block tensors whose blocks rotate (PSUM, rotating direct allocation)
become lists of tiles, the same program; verified by running both versions."""

from __future__ import annotations

from pathlib import Path

import pytest

from nkic.frontend import TensorSpec
from nkic.migrate import migrate_source, verify

ROTATING = Path(__file__).resolve().parent / "beta1_rotating.py"

# every case's blocks together exceed the buffer they are in: folded into a free dimension
# (all alive at once) the migrated kernel would not compile
CASES = {
    # 16 banks of PSUM, which has 8
    "products_per_block": {
        "lhsT": TensorSpec((128, 128), "bfloat16"),
        "rhs": TensorSpec((128, 16 * 512), "bfloat16"),
    },
    # 4 x 2 + 4 banks
    "sums_in_helpers": {
        "lhsT": TensorSpec((256, 128), "bfloat16"),
        "rhs": TensorSpec((256, 4 * 512), "bfloat16"),
    },
    # 4 x 4 banks, all alive at once: spilled, as the original's are
    "scores_then_row_max": {
        "q": TensorSpec((128, 512), "float32"),
        "k": TensorSpec((128, 2048), "float32"),
    },
    # 16 blocks of 16 KiB per partition in SBUF (208 KiB usable on trn2)
    "rows_through_two_buffers": {"a": TensorSpec((16 * 128, 4096), "float32")},
    "row_sums_in_a_helper": {"a": TensorSpec((4 * 128, 512), "float32")},
}


@pytest.fixture(scope="module")
def rotating():
    return migrate_source(ROTATING.read_text())


def test_rotating_blocks_become_lists_of_tiles(rotating):
    text = rotating.text
    assert rotating.todos == []
    body = text.split('"""', 2)[2]  # after the module docstring
    assert "par_dim" not in body and "psum_mod" not in body and "mod_alloc" not in body
    # one tile per block, the partition dimension first
    assert (
        "    prod = [nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(n)]\n"
    ) in text
    assert "    ) for _ in range(nk)] for _ in range(nq)]\n" in text  # two block dimensions
    assert "    buf = [nl.ndarray(\n        (128, cols),\n" in text
    # a block picked by its index; the rest of the subscript indexes the tile
    assert "nisa.nc_matmul(dst=prod[j][:, :], stationary=s, moving=m, accumulate=False)" in text
    assert "value=nl.copy(prod[j][:, :]))" in text  # stored from PSUM through SBUF
    # a call written over several lines keeps its lines
    assert "nisa.nc_matmul(\n                dst=qk[i][j][:, :], stationary=q_sbuf[" in text
    assert "moving=k_sbuf[0:d, j * 512 : (j + 1) * 512], accumulate=False\n            )\n" in text
    # also in the helper functions that read them (closures), accumulation included
    assert "            nisa.nc_matmul(dst=parts[j][k][:, :], stationary=s, moving=m, " in text
    assert "            nisa.nc_matmul(dst=total[j][:, :], stationary=s, moving=m)\n" in text
    assert "        both = nl.add(first, parts[j][1])\n" in text
    # a whole block assigned is written into its tile, not the list item rebound
    assert (
        "        nisa.dma_copy(dst=buf[i][:, :], src=a[i * 128 : (i + 1) * 128, 0:cols])\n" in text
    )
    # a grid of the kernel read in a helper, on a tile of a list: a slice, the grid removed
    assert "reduce_res=sums[i][0:128, j]\n            )\n" in text and "mgrid" not in body


@pytest.mark.parametrize("kernel", sorted(CASES))
def test_each_rotating_migration_computes_the_same_bits(rotating, kernel):
    outcome = verify(str(ROTATING), rotating.text, kernel, CASES[kernel], "trn2")
    assert outcome.error is None, outcome.describe()
    assert outcome.identical, outcome.describe()


def test_blocks_read_across_stay_a_free_dimension():
    # a subscript that keeps several blocks (`t[0:2]`) cannot pick a tile from a list: the
    # blocks become a free dimension, all alive at once, as for SBUF blocks
    source = (
        "import neuronxcc.nki as nki\n"
        "import neuronxcc.nki.language as nl\n"
        "\n"
        "@nki.jit\n"
        "def k(a):\n"
        "    acc = nl.zeros((2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)\n"
        "    acc[1] = nl.load(a)\n"
        "    both = nl.copy(acc[0:2, :, :])\n"
        "    sb = nl.zeros((2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)\n"
        "    sb[1] = nl.load(a)\n"
    )
    m = migrate_source(source)
    assert (
        "    acc = nl.zeros((128, 2, 512), dtype=nl.float32, buffer=nl.psum)\n"
        "    acc[:, 1, :] = nl.load(a)\n"
        "    both = nl.copy(acc[:, 0:2, :])\n"
    ) in m.text
    # SBUF blocks without a rotating allocation keep the free-dimension layout
    assert "    sb = nl.zeros((128, 2, 512), dtype=nl.float32, buffer=nl.sbuf)\n" in m.text
    assert m.todos == []
