"""nkirt.load / nkirt.execute: inputs, outputs, seeded fills and faults as the user sees them."""

from __future__ import annotations

import ml_dtypes
import nkirt
import numpy as np
import pytest
from neff_builder import Kernel
from nkirt import RunError, RuntimeFault

pytestmark = pytest.mark.usefixtures("fake_isa")


def add_kernel(dtype="bfloat16", shape=(128, 64)) -> nkirt.Program:
    k = Kernel("trn2", name="tensor_add")
    a = k.input("a", dtype, shape)
    b = k.input("b", dtype, shape)
    out = k.output("c", dtype, shape)
    ta = k.sbuf("ta", dtype, shape)
    tb = k.sbuf("tb", dtype, shape, byte=1024)
    tc = k.sbuf("tc", dtype, shape, byte=2048)
    la = k.dma(k.ap(ta), k.ap(a), queue="dma0")
    lb = k.dma(k.ap(tb), k.ap(b), queue="dma1")
    add = k.inst(
        "tensor_tensor",
        "vector",
        {"dst": k.ap(tc), "data1": k.ap(ta), "data2": k.ap(tb)},
        {"op": "add"},
        waits=[(la, 0), (lb, 0)],
    )
    k.dma(k.ap(out), k.ap(tc), waits=[(add, 0)], queue="dma2")
    return nkirt.load(k.neff())


def test_execute_computes_outputs_in_the_storage_dtype():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16)
    result = nkirt.execute(add_kernel(), {"a": a, "b": b})
    expected = (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert result.outputs["c"].dtype == np.dtype(ml_dtypes.bfloat16)
    assert np.array_equal(result.outputs["c"], expected)


def test_inputs_of_another_dtype_are_rounded_to_nearest_even():
    a = np.full((128, 64), 1 + 2**-8, np.float32)  # exactly between two bf16 values
    b = np.zeros((128, 64), np.float32)
    out = nkirt.execute(add_kernel(), {"a": a, "b": b}).outputs["c"]
    assert np.all(out.astype(np.float32) == 1.0)  # ties go to the even mantissa


def test_an_input_of_the_wrong_shape_names_the_argument_and_both_shapes():
    with pytest.raises(RunError) as info:
        nkirt.execute(add_kernel(), {"a": np.zeros((64, 64), np.float32)})
    assert str(info.value) == "input 'a': expected shape [128, 64], got [64, 64]"


def test_an_unknown_input_name_is_an_error():
    with pytest.raises(RunError, match="unknown input 'z'"):
        nkirt.execute(add_kernel(), {"z": np.zeros(3)})


def test_missing_inputs_are_seeded_random_normal_values():
    program = add_kernel("float32")
    first = nkirt.execute(program, seed=5).outputs["c"]
    again = nkirt.execute(program, seed=5).outputs["c"]
    other = nkirt.execute(program, seed=6).outputs["c"]
    assert np.array_equal(first, again)
    assert not np.array_equal(first, other)
    # a + b of two standard normals has variance 2
    assert 1.5 < first.var() < 2.5


def test_missing_integer_inputs_are_small_integers():
    out = nkirt.execute(add_kernel("int32"), seed=1).outputs["c"]
    assert out.dtype == np.int32
    assert out.min() >= -8 and out.max() <= 8


def test_timing_only_runs_no_numerics_and_returns_no_outputs():
    result = nkirt.execute(add_kernel(), timing_only=True)
    assert result.outputs == {}
    assert result.profile["instructions"] == 4


def uninitialised_read() -> nkirt.Program:
    k = Kernel("trn2")
    k.output("y", "float32", [128, 8])
    a = k.sbuf("a", "float32", [128, 8])
    b = k.sbuf("b", "float32", [128, 8], byte=64)
    # (a read of which a part was written computes; see tests/e2e/test_partly_written.py)
    k.inst("memset", "vector", {"dst": k.ap(b, [[8, 128], [1, 4]]), "value": {"imm": 0.0}})
    k.inst("tensor_copy", "vector", {"dst": k.ap(b), "src": k.ap(a)}, line=27)
    return nkirt.load(k.neff())


def test_reading_never_written_sbuf_is_a_fault_naming_the_source_line():
    with pytest.raises(RuntimeFault) as info:
        nkirt.execute(uninitialised_read())
    assert str(info.value) == (
        "uninitialised read: tensor_copy at /src/kernels/test_kernel.py:27 reads operand 'src' "
        "(a in sbuf) before anything wrote it"
    )


def test_memory_a_previous_run_wrote_is_unwritten_in_the_next_run():
    """Runs reuse the core's buffers (memory.POOL): what the last run wrote there is stale,
    never 'written', for the next one."""
    from nkirt import memory

    full = np.ones((128, 64), np.float32)
    nkirt.execute(add_kernel("float32"), {"a": full, "b": full})  # writes SBUF bytes 0..
    assert memory.POOL.held > 0
    with pytest.raises(RuntimeFault, match="reads operand 'src' \\(a in sbuf\\) before"):
        nkirt.execute(uninitialised_read())
    # a run that faults does not give its arrays back; the next one still starts clean
    with pytest.raises(RuntimeFault, match="before anything wrote it"):
        nkirt.execute(uninitialised_read())


def test_a_tile_written_whole_then_overwritten_from_unwritten_memory_is_unwritten_again():
    """SBUF remembers the regions written whole (memory.Memory.whole); a write computed from
    memory nothing wrote makes the region unwritten again, and its readers see it."""
    k = Kernel("trn2")
    y = k.output("y", "float32", [128, 8])
    a = k.sbuf("a", "float32", [128, 8])
    b = k.sbuf("b", "float32", [128, 8], byte=64)
    c = k.sbuf("c", "float32", [128, 8], byte=128)
    k.inst("memset", "vector", {"dst": k.ap(a), "value": {"imm": 1.0}})
    k.inst("memset", "vector", {"dst": k.ap(b, [[8, 128], [1, 4]]), "value": {"imm": 0.0}})
    k.inst("tensor_copy", "vector", {"dst": k.ap(a), "src": k.ap(b)}, waits=[(1, 0)])
    k.inst("tensor_copy", "vector", {"dst": k.ap(c), "src": k.ap(a)}, waits=[(2, 0)])
    k.dma(k.ap(y), k.ap(c), waits=[(3, 0)])
    with pytest.raises(RuntimeFault, match="output 'y' holds elements computed from memory"):
        nkirt.execute(nkirt.load(k.neff()))


def test_the_memory_pool_holds_at_most_its_limit():
    from nkirt.memory import _Pool

    pool = _Pool(20)
    pool.give([(np.ones(6, np.uint8), False), (np.zeros(6, np.uint8), True)])
    pool.give([(np.ones(9, np.uint8), False)])  # over the limit: not kept
    assert pool.held == 12
    buffer = pool.take(6, zeroed=False)  # any contents: the one that is not clean
    assert buffer.all()
    pool.give([(buffer, False)])
    assert not pool.take(6, zeroed=True).any()  # the clean one
    assert not pool.take(6, zeroed=True).any()  # the other one, cleared when taken
    assert pool.held == 0 and pool.take(6, zeroed=False).size == 6  # none left: a fresh one


def test_timing_only_does_not_track_initialisation():
    assert nkirt.execute(uninitialised_read(), timing_only=True).profile["instructions"] == 2


def test_a_failing_instruction_is_reported_with_its_source_line(fake_isa, monkeypatch):
    def broken(ctx, ops, attrs):
        raise ValueError("unsupported op 'divide'")

    table = dict(fake_isa.SEMANTICS)
    table["tensor_tensor"] = type(table["tensor_tensor"])(broken)
    monkeypatch.setattr(fake_isa, "SEMANTICS", table)
    with pytest.raises(RuntimeFault, match=r"tensor_tensor at .*test_kernel.py:13: ValueError"):
        nkirt.execute(add_kernel())


def test_an_instruction_without_semantics_is_a_run_error(fake_isa, monkeypatch):
    table = {k: v for k, v in fake_isa.SEMANTICS.items() if k != "tensor_tensor"}
    monkeypatch.setattr(fake_isa, "SEMANTICS", table)
    with pytest.raises(RunError, match="no semantics for tensor_tensor at .*:13"):
        nkirt.execute(add_kernel())


def test_semantics_receive_operand_dtypes_target_and_a_seeded_generator(fake_isa, monkeypatch):
    seen = {}

    def spy(ctx, ops, attrs):
        seen.update(target=ctx.target, dtypes=attrs["_dtypes"], draw=ctx.rng.integers(1 << 30))
        return {"dst": np.asarray(ops["data1"]) + np.asarray(ops["data2"])}

    table = dict(fake_isa.SEMANTICS)
    table["tensor_tensor"] = type(table["tensor_tensor"])(spy)
    monkeypatch.setattr(fake_isa, "SEMANTICS", table)
    nkirt.execute(add_kernel(), seed=3)
    first = seen["draw"]
    nkirt.execute(add_kernel(), seed=3)
    assert seen["draw"] == first
    assert seen["target"] == "trn2"
    assert seen["dtypes"] == {"dst": "bfloat16", "data1": "bfloat16", "data2": "bfloat16"}


def test_matmul_accumulates_into_psum_and_reads_back():
    k = Kernel("trn1")
    w = k.input("w", "float32", [128, 32])
    x = k.input("x", "float32", [128, 64])
    y = k.output("y", "float32", [32, 64])
    tw = k.sbuf("tw", "float32", [128, 32])
    tx = k.sbuf("tx", "float32", [128, 64], byte=256)
    acc = k.psum("acc", "float32", [32, 64])
    out = k.sbuf("out", "float32", [32, 64], byte=1024)
    lw = k.dma(k.ap(tw), k.ap(w))
    lx = k.dma(k.ap(tx), k.ap(x), queue="dma1")
    operands = {"dst": k.ap(acc), "stationary": k.ap(tw), "moving": k.ap(tx)}
    k.inst("nc_matmul", "tensor", operands, {"accumulate": False}, waits=[(lw, 0), (lx, 0)])
    mm = k.inst("nc_matmul", "tensor", operands, {"accumulate": True})
    cp = k.inst("tensor_copy", "vector", {"dst": k.ap(out), "src": k.ap(acc)}, waits=[(mm, 0)])
    k.dma(k.ap(y), k.ap(out), waits=[(cp, 0)])
    rng = np.random.default_rng(3)
    wv = rng.standard_normal((128, 32)).astype(np.float32)
    xv = rng.standard_normal((128, 64)).astype(np.float32)
    result = nkirt.execute(nkirt.load(k.neff()), {"w": wv, "x": xv})
    np.testing.assert_allclose(result.outputs["y"], 2 * wv.T @ xv, rtol=1e-5, atol=1e-4)


def test_kernel_writing_a_parameter_returns_it_under_its_name():
    k = Kernel()
    x = k.input("x", "float32", [128, 4])
    tile = k.sbuf("t", "float32", [128, 4])
    k.dma(k.ap(tile), k.ap(x))
    k.dma(k.ap(x), k.ap(tile), waits=[(0, 0)], queue="dma1")
    data = np.arange(512, dtype=np.float32).reshape(128, 4)
    assert np.array_equal(nkirt.execute(nkirt.load(k.neff()), {"x": data}).outputs["x"], data)


def test_constant_tensors_hold_their_data():
    k = Kernel()
    values = np.arange(128 * 4, dtype=np.float32).reshape(128, 4)
    c = k.constant("table", values)
    y = k.output("y", "float32", [128, 4])
    k.dma(k.ap(y), k.ap(c))
    assert np.array_equal(nkirt.execute(nkirt.load(k.neff())).outputs["y"], values)
