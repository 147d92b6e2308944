"""A symbolic loop whose body unrolls an inner loop allocates the inner loop's tiles as the
fully unrolled program does: the tiles of one site share the slots of one rotation
(docs/cost-model.md, "A symbolic loop's tiles take the slots of its unrolled form"), so the
kept loop predicts exactly the latency of its unrolled form."""

from __future__ import annotations

import nkirt

from nkic import driver
from nkic.frontend import TensorSpec

# A `sequential_range` loop kept symbolic; the plain `range` loops inside it are unrolled,
# so each execution of its body allocates four `ps` and two `q` PSUM tiles.
KERNEL = """import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def k(a, b):
    T, K, P = a.shape
    N = b.shape[1]
    out = nl.ndarray((T, P, 6 * N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    bt = nl.ndarray((K, N), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=bt, src=b)
    for t in nl.sequential_range(T):
        at = nl.ndarray((K, P), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=at, src=a[t])
        r = nl.ndarray((P, 6 * N), dtype=nl.bfloat16, buffer=nl.sbuf)
        for g in range(4):
            ps = nl.ndarray((P, N), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=ps, stationary=at, moving=bt)
            nisa.activation(dst=r[:, g * N : (g + 1) * N], op=nl.exp, data=ps)
        for g in range(2):
            q = nl.ndarray((P, N), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=q, stationary=at, moving=bt)
            nisa.tensor_copy(dst=r[:, (4 + g) * N : (5 + g) * N], src=q)
        nisa.dma_copy(dst=out[t], src=r)
    return out
"""
ARGS = {"a": TensorSpec((8, 128, 128), "bfloat16"), "b": TensorSpec((128, 128), "bfloat16")}


def compiled(tmp_path, unroll: bool) -> nkirt.Program:
    path = tmp_path / "kernel.py"
    path.write_text(KERNEL)
    res = driver.compile_file(str(path), "k", ARGS, "trn2", unroll_all=unroll)
    assert res.ok, res.diagnostics
    return nkirt.load(res.neff)


def psum_slots(program: nkirt.Program, name: str) -> set[int]:
    """The PSUM byte offsets the tiles named `name` use, every rotation slot included."""
    out = set()
    for t in program.tensors.values():
        if t.buffer == "psum" and t.name == name:
            count, stride = (t.rotate[1], t.rotate[2]) if t.rotate else (1, 0)
            out |= {t.address[1] + s * stride for s in range(count)}
    return out


def test_kept_body_tiles_rotate_over_the_unrolled_slots(tmp_path):
    kept, unrolled = compiled(tmp_path, False), compiled(tmp_path, True)
    assert kept.instance_count == unrolled.instance_count
    # unrolled: the 32 `ps` tiles alternate over two banks, the 16 `q` tiles over two more;
    # kept, the four `ps` tensors of the body were four rotations of two banks each (eight
    # banks: the `q` tiles were left one bank, and the kernel predicted 17.68 us for 13.83)
    for name in ("ps", "q"):
        assert psum_slots(kept, name) == psum_slots(unrolled, name)
        assert len(psum_slots(kept, name)) == 2
    symbolic = nkirt.execute(kept, {}, timing_only=True).profile["total_ns"]
    flat = nkirt.execute(unrolled, {}, timing_only=True).profile["total_ns"]
    assert symbolic == flat
