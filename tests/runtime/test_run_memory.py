"""A functional run holds the kernel's tensors and the core's state, not copies of them."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import nkirt
import numpy as np

import nkic
from nkic.frontend import TensorSpec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_run_with_seeded_inputs_stays_near_the_kernels_own_tensors():
    shape = (8192, 2048)  # three bf16 tensors of 32 MiB: they dominate the core's 26 MiB
    k = nkic.compile(
        str(EXAMPLES / "tiled_add.py"),
        kernel="tiled_add",
        a=TensorSpec(shape, "bfloat16"),
        b=TensorSpec(shape, "bfloat16"),
    )
    program = nkirt.load(k.neff)
    tensors = 3 * np.prod(shape) * 2
    tracemalloc.start()
    try:
        nkirt.execute(program, {}, seed=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # inputs need no 'written' shadow and are filled in place in chunks; outputs are returned
    # without a copy. What remains: the output's shadow, SBUF/PSUM and their shadows (~2.3x
    # the tensors here; 4x before inputs were streamed).
    assert peak < 2.4 * tensors, f"peak {peak / 2**20:.0f} MiB for {tensors / 2**20:.0f} MiB"


def test_seeded_inputs_do_not_depend_on_the_chunking():
    """Filling a large input chunk by chunk gives the values of one draw (the same seed gives
    the same data whatever the tensor size)."""
    from nkirt.program import TensorInfo
    from nkirt.run import fill_random_input, random_input

    info = TensorInfo(0, "x", "input", "hbm", "bfloat16", (3000, 1500))
    whole = random_input(info, np.random.default_rng(4))
    chunked = np.empty_like(whole)
    fill_random_input(info, np.random.default_rng(4), chunked)
    np.testing.assert_array_equal(whole.view(np.uint16), chunked.view(np.uint16))


def test_given_inputs_that_no_instruction_writes_are_not_copied():
    shape = (8192, 2048)
    k = nkic.compile(
        str(EXAMPLES / "tiled_add.py"),
        kernel="tiled_add",
        a=TensorSpec(shape, "bfloat16"),
        b=TensorSpec(shape, "bfloat16"),
    )
    program = nkirt.load(k.neff)
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal(shape, dtype=np.float32).astype("bfloat16") for _ in "ab")
    a_bits, b_bits = a.view(np.uint16).copy(), b.view(np.uint16).copy()
    tensors = 3 * np.prod(shape) * 2
    tracemalloc.start()
    try:
        run = nkirt.execute(program, {"a": a, "b": b})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the output, its shadow and the core's buffers; two input copies would add 0.67x
    assert peak < 1.7 * tensors, f"peak {peak / 2**20:.0f} MiB for {tensors / 2**20:.0f} MiB"
    np.testing.assert_array_equal(a.view(np.uint16), a_bits)
    np.testing.assert_array_equal(b.view(np.uint16), b_bits)
    assert a.flags.writeable and b.flags.writeable
    (out,) = run.outputs.values()
    want = (a.astype(np.float32) + b.astype(np.float32)).astype("bfloat16")
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))


PARTIAL = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def partial(a, p):
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 32), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a[:, 0:32])
    nisa.dma_copy(dst=out[:, 0:32], src=t)
    pred = nl.ndarray((128, 32), dtype=p.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=pred, src=p)
    kept = nl.ndarray((128, 32), dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy_predicated(dst=kept, src=t, predicate=pred)
    nisa.dma_copy(dst=out[:, 32:64], src=kept)
    return out
"""


def test_bytes_nothing_wrote_read_as_0xff_in_outputs_and_read_back_operands(tmp_path):
    """Memory is not filled up front: what a run can observe unwritten still reads 0xFF (NaN),
    run after run."""
    src = tmp_path / "partial.py"
    src.write_text(PARTIAL)
    k = nkic.compile(
        str(src),
        kernel="partial",
        a=TensorSpec((128, 64), "float32"),
        p=TensorSpec((128, 32), "uint8"),
    )
    program = nkirt.load(k.neff)
    rng = np.random.default_rng(5)
    for _ in range(2):
        a = rng.standard_normal((128, 64), dtype=np.float32)
        p = rng.integers(0, 2, (128, 32), dtype=np.uint8)
        (out,) = nkirt.execute(program, {"a": a, "p": p}).outputs.values()
        np.testing.assert_array_equal(out[:, 0:32], a[:, 0:32])
        bits = out[:, 32:64].view(np.uint32)
        np.testing.assert_array_equal(bits[p != 0], a[:, 0:32].view(np.uint32)[p != 0])
        assert (bits[p == 0] == 0xFFFFFFFF).all()
