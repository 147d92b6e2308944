"""Variable-size collectives (`all_to_all_v`, `all_gather_v`), their NKI 0.7 prepare/trigger
split with its one shared slot, collective permutes and replica groups, between the two cores
of an LNC=2 launch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from nkirt.cost.collectives import exchange_ns
from nkirt.cost.tables import DMA_ENGINES, DMA_FIXED_NS, TARGETS
from nkirt.errors import RuntimeFault

import nkic
from tests.deprecations import without_loop_deprecations

KERNELS = Path(__file__).parent / "lnc" / "collectives_v.py"
N = 64


def _inputs():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, N), dtype=np.float32)
    meta = np.zeros((2, 3, 2), np.uint32)
    meta[0, 0], meta[0, 1] = [5, 7], [0, 10]  # core 0 sends 5 elements to itself, 7 to core 1
    meta[1, 0], meta[1, 1] = [3, 30], [40, 2]
    return a, meta


def _all_to_all_v(a, meta):
    """numpy reference: sender s's chunk for d at slot s of d's dst; row 2 gets the counts."""
    out, after, slot = a.copy(), meta.copy(), a.shape[1] // 2
    for s in range(2):
        for d in range(2):
            count, displ = meta[s, 0, d], meta[s, 1, d]
            out[d, s * slot : s * slot + count] = a[s, displ : displ + count]
            after[d, 2, s] = count
    return out, after


@pytest.mark.parametrize("name", ["a2av", "a2av_split"])
def test_all_to_all_v_matches_numpy(name):
    a, meta = _inputs()
    assert nkic.check(KERNELS, kernel=name, a=a, meta=meta) == []
    out, after = nkic.compile(KERNELS, a, meta, kernel=name, lnc=2)(a, meta)
    want_out, want_after = _all_to_all_v(a, meta)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(after, want_after)


def test_all_gather_v_sends_one_chunk_to_every_rank():
    a, meta = _inputs()
    out = nkic.compile(KERNELS, a, meta, kernel="agv", lnc=2)(a, meta)
    want, slot = a.copy(), N // 2
    for s in range(2):
        count, displ = meta[s, 0, 0], meta[s, 1, 0]  # only the first column is read
        for d in range(2):
            want[d, s * slot : s * slot + count] = a[s, displ : displ + count]
    np.testing.assert_array_equal(out, want)


def test_a_chunk_larger_than_its_slot_is_a_fault():
    a, meta = _inputs()
    meta[1, 0, 0], meta[1, 1, 0] = N // 2 + 1, 0
    kernel = nkic.compile(KERNELS, a, meta, kernel="a2av", lnc=2)
    with pytest.raises(RuntimeFault, match="receives 33 elements from rank 1"):
        kernel(a, meta)


def test_prepare_hides_the_setup_behind_the_data():
    """The setup (one DMA fixed cost) runs at the prepare; the trigger pays only the data."""
    table = TARGETS["trn2"]
    plain = exchange_ns("all_to_all_v", 4096, table)
    assert plain == 2 * DMA_FIXED_NS + 4096 / (table.dma_engine_bytes_per_ns * DMA_ENGINES)
    assert plain - exchange_ns("all_to_all_v", 4096, table, prepared=True) == DMA_FIXED_NS
    # end to end: `dst` is filled late (three dependent DMAs), the counts early
    a, meta = _inputs()
    totals = {}
    for name in ("a2av", "a2av_split"):
        kernel = nkic.compile(KERNELS, a, meta, kernel=name, lnc=2)
        kernel(a, meta)
        totals[name] = kernel.profile["total_ns"]
    assert totals["a2av"] - totals["a2av_split"] == pytest.approx(DMA_FIXED_NS, rel=0.01)


def test_permutes_and_the_ring_rank_match_numpy():
    a = np.random.default_rng(4).standard_normal((256, 64), dtype=np.float32)
    assert nkic.check(KERNELS, kernel="swap", a=a) == []
    out = nkic.compile(KERNELS, a, kernel="swap", lnc=2)(a)
    halves = [a[:128], a[128:]]
    np.testing.assert_array_equal(out[0], np.concatenate(halves[::-1]))
    np.testing.assert_array_equal(out[1], a)  # ring step 1 holds the other core's rows
    top = np.maximum(*halves)
    np.testing.assert_array_equal(out[2], np.concatenate([top, top]))


HEADER = """import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl

G = [[0, 1]]


@nki.jit
def kernel(a, meta):
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    m = nl.ndarray((3, 2), meta.dtype, buffer=nl.private_hbm)
    nisa.dma_copy(dst=m, src=meta[core])
    nisa.dma_copy(dst=out[core], src=a[core])
"""
PREPARE = (
    "ncc.all_to_all_v_prepare(srcs=[a[core]], dsts=[out[core]], "
    "replica_group=ncc.ReplicaGroup(G), metadata_tensor=m)"
)


def _check(tmp_path, body: str, nki: str | None = None):
    path = tmp_path / "kernel.py"
    path.write_text(HEADER + body + "    return out\n")
    specs = {"a": nkic.TensorSpec((2, N), "float32"), "meta": nkic.TensorSpec((2, 3, 2), "uint32")}
    return without_loop_deprecations(nkic.check(path, nki=nki, **specs))


@pytest.mark.parametrize(
    "body",
    [
        f"    h = {PREPARE}\n    g = {PREPARE}\n    ncc.all_to_all_v_trigger(h)\n",
        f"    h = {PREPARE}\n",
        f"    h = {PREPARE}\n    for i in nl.sequential_range(2):\n"
        "        ncc.all_to_all_v_trigger(h)\n",
        f"    h = {PREPARE}\n    ncc.all_to_all_v_trigger(h)\n    ncc.all_to_all_v_trigger(h)\n",
    ],
    ids=["two_pending", "never_triggered", "trigger_in_a_loop", "triggered_twice"],
)
def test_the_one_prepare_slot(tmp_path, body):
    assert [d.code for d in _check(tmp_path, body)] == ["nkic_collective_prepare_slot"]


def test_prepare_then_trigger_is_clean(tmp_path):
    body = f"    for i in nl.sequential_range(2):\n        h = {PREPARE}\n"
    body += "        ncc.all_to_all_v_trigger(h)\n"
    assert _check(tmp_path, body) == []


def test_replica_groups_beyond_the_launch_are_reported(tmp_path):
    body = (
        "    ncc.all_to_all_v(srcs=[a[core]], dsts=[out[core]], "
        "replica_group=ncc.ReplicaGroup([[0, 1, 2, 3]]), metadata_tensor=m)\n"
    )
    diags = _check(tmp_path, body)
    assert [d.code for d in diags] == ["err_unsupported_api"]
    assert "ranks [2, 3] are cores of other launches or devices" in diags[0].message


@pytest.mark.parametrize(
    ("group", "code", "words"),
    [
        ("[[0], [1]]", "err_unsupported_api", "groups of one core each"),
        ("[[1, 0]]", "err_unsupported_api", "in core order"),
        ("[[0, 1], [1]]", "err_invalid_argument", "lists rank 1 twice"),
    ],
)
def test_other_groups_within_the_launch_are_reported(tmp_path, group, code, words):
    body = (
        "    ncc.all_to_all_v(srcs=[a[core]], dsts=[out[core]], "
        f"replica_group=ncc.ReplicaGroup({group}), metadata_tensor=m)\n"
    )
    diags = _check(tmp_path, body)
    assert [d.code for d in diags] == [code]
    assert words in diags[0].message


def test_an_explicit_permute_takes_hbm_tensors_only(tmp_path):
    body = (
        "    t = nl.ndarray((2, 64), a.dtype, buffer=nl.sbuf)\n"
        "    nisa.dma_copy(dst=t, src=a)\n"
        "    ncc.collective_permute(srcs=[t], dsts=[t], source_target_pairs=[(0, 1), (1, 0)])\n"
    )
    diags = _check(tmp_path, body)
    assert [d.code for d in diags] == ["err_unsupported_memory"]
    assert "srcs is in sbuf" in diags[0].message


def test_metadata_must_be_uint32_rows_by_ranks(tmp_path):
    body = (
        "    bad = nl.ndarray((2, 2), nl.uint32, buffer=nl.private_hbm)\n"
        "    ncc.all_to_all_v(srcs=[a[core]], dsts=[out[core]], "
        "replica_group=ncc.ReplicaGroup(G), metadata_tensor=bad)\n"
    )
    diags = _check(tmp_path, body)
    assert [d.code for d in diags] == ["err_shape_mismatch"]
    assert "[3, 2]" in diags[0].message


@pytest.mark.parametrize(
    ("version", "name"), [("0.5", "all_gather_v"), ("0.6", "all_to_all_v_prepare")]
)
def test_names_exist_from_their_nki_version(tmp_path, version, name):
    call = f"ncc.{name}(srcs=[a[core]], dsts=[out[core]], replica_group=ncc.ReplicaGroup(G), "
    diags = _check(tmp_path, f"    {call}metadata_tensor=m)\n", nki=version)
    assert [d.code for d in diags] == ["err_unknown_api"]
    assert name in diags[0].message
