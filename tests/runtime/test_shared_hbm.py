"""The HBM stack a NeuronCore's DMAs pass, shared by the two cores of an LNC=2 launch: every
byte a transfer reads from or writes to HBM occupies the stack at its bandwidth (trn2: 2.9 TB/s
over 4 stacks = 725 GB/s, each stack shared by 2 physical cores)."""

from __future__ import annotations

import numpy as np
import pytest
from nkirt.cost.tables import TARGETS
from nkirt.profile import summarize

import nkic

STREAM = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def stream(a):
    core = nl.program_id()
    T = a.shape[0] // (128 * nl.num_programs())
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(T):
        tile = nl.ndarray((128, a.shape[1]), a.dtype, buffer=nl.sbuf)
        rows = (core * T + t) * 128
        nisa.dma_copy(dst=tile, src=a[rows : rows + 128, :])
        nisa.dma_copy(dst=out[rows : rows + 128, :], src=tile)
    return out
"""
COPY = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def copy(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(a.shape[0] // 1024):
        nisa.dma_copy(dst=out[t * 1024 : (t + 1) * 1024, :], src=a[t * 1024 : (t + 1) * 1024, :])
    return out
"""
TILES, F = 32, 4096  # per core: 32 tiles of [128, 4096] fp32 in and out = 128 MiB of HBM bytes
STACK = TARGETS["trn2"].hbm_stack_gbps  # bytes per ns


def _latency(path, lnc: int, target: str = "trn2") -> tuple[float, dict]:
    a = np.zeros((lnc * TILES * 128, F), np.float32)
    kernel = nkic.compile(path, a, lnc=lnc, target=target)
    kernel(a, timing_only=True)
    return kernel.profile["total_ns"], kernel.profile


def test_two_cores_streaming_share_the_stack(tmp_path):
    path = tmp_path / "stream.py"
    path.write_text(STREAM)
    hbm_bytes = 2 * TILES * 128 * F * 4  # one core's reads and writes
    alone, _ = _latency(path, 1)
    # one core's 16 DMA engines (435 GB/s) cannot fill the 725 GB/s stack: engine-bound
    assert alone < 0.97 * 2 * hbm_bytes / STACK
    assert alone > hbm_bytes / STACK
    both, profile = _latency(path, 2)
    # together they need the stack for both cores' bytes: 2 x 128 MiB at 725 GB/s
    assert both == pytest.approx(2 * hbm_bytes / STACK, rel=0.03)
    assert both / alone > 1.08
    stack = profile["hbm_stack"]
    assert stack["cores"] == 2 and stack["gbps"] == STACK
    assert stack["busy_ns"] == pytest.approx(2 * hbm_bytes / STACK, rel=1e-6)
    assert stack["utilization"] > 0.95
    assert "HBM stack (725 GB/s, shared by the 2 cores): busy" in summarize(profile)
    # the cores share it fairly: neither finishes far ahead of the other
    first, second = (core["total_ns"] for core in profile["cores"])
    assert abs(first - second) < 0.03 * both


def test_an_hbm_to_hbm_copy_is_bounded_by_the_stack(tmp_path):
    """It reads and writes HBM: 2 bytes of stack time per byte the engines move once."""
    path = tmp_path / "copy.py"
    path.write_text(COPY)
    a = np.zeros((8192, 2048), np.float32)
    kernel = nkic.compile(path, a)
    kernel(a, timing_only=True)
    moved = a.nbytes
    engines = moved / (16 * TARGETS["trn2"].dma_engine_bytes_per_ns)
    assert kernel.profile["total_ns"] > 2 * moved / STACK > engines
    assert kernel.profile["total_ns"] == pytest.approx(2 * moved / STACK, rel=0.05)


def test_trn1_keeps_its_measured_rate_and_no_stack(tmp_path):
    path = tmp_path / "copy.py"
    path.write_text(COPY)
    a = np.zeros((2048, 512), np.float32)
    kernel = nkic.compile(path, a, target="trn1")
    kernel(a, timing_only=True)
    assert "hbm_stack" not in kernel.profile
