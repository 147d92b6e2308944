"""A `.neff` from anywhere: every defect is one NeffError before anything runs or is
allocated, and the limits of a run are checked up front."""

from __future__ import annotations

import os
import struct
import threading
import time
import zlib

import nkirt
import pytest
from neff_builder import Kernel, container, write_neff


def copy_kernel(name: str = "out") -> Kernel:
    k = Kernel("trn2")
    x = k.input("x", "float32", [128, 64])
    y = k.output(name, "float32", [128, 64])
    a = k.sbuf("a", "float32", [128, 64])
    load = k.dma(k.ap(a), k.ap(x))
    k.dma(k.ap(y), k.ap(a), waits=[(load, 0)])
    return k


def refused(blob, match: str, limits=None):
    with pytest.raises(nkirt.NeffError, match=match) as info:
        nkirt.load(blob, limits or nkirt.Limits())
    assert "\n" not in str(info.value)
    return str(info.value)


@pytest.mark.parametrize("name", ["../../x", "/abs/x", "a/b", "x.npy", "a b"])
def test_an_output_name_that_is_not_an_identifier_is_refused(name):
    refused(copy_kernel(name).neff(), "not a plain identifier")


def test_the_copy_kernel_itself_loads_and_runs(fake_isa):
    res = nkirt.execute(nkirt.load(copy_kernel().neff()))
    assert list(res.outputs) == ["out"]


def test_terminal_escapes_in_names_are_refused_and_never_echoed():
    k = copy_kernel()
    k.tensors[2]["name"] = "a\x1b[2J"
    message = refused(k.neff(), "control characters")
    assert "\x1b" not in message and "\\x1b" in message
    program = k.program()
    program["files"] = ["/src/\x1b]0;title\x07k.py"]
    assert "\x1b" not in refused(write_neff(program), "files entry")


def test_a_huge_dimension_is_refused_before_allocation():
    k = copy_kernel()
    k.tensors[0]["shape"] = [2**31, 2**31]
    refused(k.neff(), "more than the 1.0 TiB a tensor may have")


def test_integers_beyond_2_53_are_refused():
    k = copy_kernel()
    k.tensors[0]["shape"] = [10**30, 1]
    refused(k.neff(), "out of range")


def test_a_trip_count_beyond_the_instance_limit_is_refused():
    k = copy_kernel()
    with k.loop("i", 0, 10**15):
        k.inst("memset", "vector", {"dst": k.ap(2), "value": {"imm": 0.0}})
    refused(k.neff(), "1,000,000,000,000,002 instruction instances, more than the limit")


def test_the_instance_limit_can_be_raised():
    k = copy_kernel()
    with k.loop("i", 0, 1000):
        k.inst("memset", "vector", {"dst": k.ap(2), "value": {"imm": 0.0}})
    refused(k.neff(), "limit of 100", nkirt.Limits(max_instances=100))
    assert nkirt.load(k.neff(), nkirt.Limits(max_instances=2000)).instance_count == 1002


def test_a_wait_cycle_is_a_deadlock_naming_the_instructions():
    k = Kernel("trn2")
    x = k.input("x", "float32", [128, 64])
    k.output("y", "float32", [128, 64])
    a = k.sbuf("a", "float32", [128, 64])
    b = k.sbuf("b", "float32", [128, 64], byte=1024)
    # the load waits for the copy that waits for it
    k.inst("dma_copy", "dma", {"dst": k.ap(a), "src": k.ap(x)}, waits=[(1, 0)], line=20)
    k.inst("tensor_copy", "vector", {"dst": k.ap(b), "src": k.ap(a)}, waits=[(0, 0)], line=21)
    message = refused(k.neff(), "deadlock")
    assert "instruction 0 (dma_copy at /src/kernels/test_kernel.py:20)" in message
    assert "instruction 1 (tensor_copy at /src/kernels/test_kernel.py:21)" in message


def test_a_wait_for_a_later_instruction_outside_any_common_loop_is_refused():
    k = Kernel("trn2")
    k.output("y", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 64])
    b = k.sbuf("b", "float32", [128, 64], byte=1024)
    k.inst("memset", "vector", {"dst": k.ap(a), "value": {"imm": 0.0}}, waits=[(1, 0)])
    k.inst("memset", "gpsimd", {"dst": k.ap(b), "value": {"imm": 0.0}})
    refused(k.neff(), "issued after it in no common loop")


def test_a_loop_carried_wait_on_a_later_instruction_is_fine():
    k = Kernel("trn2")
    k.output("y", "float32", [1, 1])
    a = k.sbuf("a", "float32", [128, 64])
    with k.loop("i", 0, 3):
        k.inst("memset", "vector", {"dst": k.ap(a), "value": {"imm": 0.0}}, waits=[(1, 0)])
        k.inst("activation", "scalar", {"dst": k.ap(a), "data": k.ap(a)}, {"op": "exp"}, [(0, 0)])
    assert nkirt.load(k.neff()).instance_count == 6


def test_a_zlib_bomb_is_refused_without_inflating_it():
    bomb = zlib.compress(b"\0" * (1 << 30), 9)  # 1 GiB of zeros in 1 MB
    blob = container([(b"PROG", 1, bomb)])
    start = time.process_time()
    refused(blob, "PROG inflates past 160.0 MiB")
    assert time.process_time() - start < 2  # a quarter inflated, not all


def test_an_unknown_section_is_skipped_unread():
    bomb = zlib.compress(b"\0" * (64 << 20), 9)
    program = write_neff(copy_kernel().program())
    count = struct.unpack_from("<I", program, 12)[0]
    assert count == 1
    prog_payload = program[48 + 24 :]
    blob = container([(b"PROG", 1, prog_payload), (b"JUNK", 1, bomb[:1000])])
    assert nkirt.load(blob).kernel == "k"


def test_data_larger_than_the_memory_limit_is_refused():
    bomb = zlib.compress(b"\0" * (8 << 20), 9)
    blob = container([(b"PROG", 1, zlib.compress(b"{}")), (b"DATA", 1, bomb)])
    refused(blob, "DATA inflates past 1.0 MiB", nkirt.Limits(max_memory=1 << 20))


def test_deeply_nested_json_is_refused():
    blob = container([(b"PROG", 0, b"[" * 100_000 + b"]" * 100_000)])
    refused(blob, "nests JSON too deeply")


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.neff"
    os.mkfifo(fifo)
    result = []
    reader = threading.Thread(target=lambda: result.append(_try_load(fifo)), daemon=True)
    reader.start()
    reader.join(5)
    assert result == ["not a regular file"]


def _try_load(path):
    try:
        nkirt.load(path)
    except nkirt.NeffError as e:
        return "not a regular file" if "is not a regular file" in str(e) else str(e)
    return "loaded"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_is_refused():
    refused("/dev/zero", "/dev/zero is not a regular file")


def test_a_run_that_needs_more_memory_than_the_limit_is_refused_up_front():
    k = Kernel("trn2")
    x = k.input("x", "float32", [65536, 65536])
    k.output("y", "float32", [1, 1])
    k.dma(k.ap(k.sbuf("a", "float32", [128, 64])), k.ap(x, [[65536, 128], [1, 64]]))
    program = nkirt.load(k.neff())
    with pytest.raises(nkirt.RunError, match=r"needs 64\.1 GiB of memory \(largest tensor: x\)"):
        nkirt.execute(program)
    # timing alone allocates no tensor memory
    assert nkirt.execute(program, timing_only=True).profile["instructions"] == 1


def wide_then_narrow(wait: bool) -> Kernel:
    """A DMA writes rows 0 and 2**26 - 1 of a 1 GiB HBM tensor (a footprint over half a
    million buckets), then another queue reads row 0."""
    k = Kernel("trn2")
    k.output("unused", "float32", [1, 1])
    big = k.output("big", "float32", [2**26, 4])
    a = k.sbuf("a", "float32", [2, 4])
    b = k.sbuf("b", "float32", [1, 4], byte=64)
    k.inst("memset", "vector", {"dst": k.ap(a), "value": {"imm": 0.0}})
    store = k.dma(k.ap(big, [[4 * (2**26 - 1), 2], [1, 4]]), k.ap(a), waits=[(0, 0)])
    k.dma(k.ap(b), k.ap(big, [[4, 1], [1, 4]]), waits=[(store, 0)] if wait else (), queue="dma1")
    return k


def test_a_footprint_across_a_huge_tensor_is_checked_without_enumerating_it():
    start = time.process_time()
    assert nkirt.execute(nkirt.load(wide_then_narrow(True).neff()), timing_only=True)
    with pytest.raises(nkirt.RuntimeFault, match="RAW hazard on operand 'src', tensor big"):
        nkirt.execute(nkirt.load(wide_then_narrow(False).neff()), timing_only=True)
    assert time.process_time() - start < 2


@pytest.mark.parametrize(
    "names, unrolled, match",
    [
        ({"i": 1}, [0, 1], "field 'unrolled_names'"),
        ([[]], [0], "unrolled_names entry 0 must be a non-empty list of loop variable names"),
        ([["i"], "k"], [0, 1], "unrolled_names entry 1 must be a non-empty list"),
        ([["i", 1]], [0, 1, 2], "unrolled_names entry 0 must be a non-empty list"),
        ([["i\x1b[2J"]], [0, 1], "unrolled_names entry 0 loop variable .* control characters"),
        ([["i", "k"], ["i", "k"]], [0, 1, 2], "lists a tuple of loop names twice"),
        ([["i"]], {"i": 1}, r"'unrolled' must be \[index into unrolled_names, one int per name\]"),
        ([["i"]], [], r"'unrolled' must be \[index into unrolled_names"),
        ([["i"]], [0, "1"], r"'unrolled' must be \[index into unrolled_names"),
        ([["i"]], [0, True], r"'unrolled' must be \[index into unrolled_names"),
        ([["i"]], [1, 1], r"'unrolled' must be .* \(the program has 1 unrolled_names entries\)"),
        ([["i"]], [-1, 1], r"'unrolled' must be \[index into unrolled_names"),
        (None, [0, 1], r"the program has 0 unrolled_names entries"),
        ([["i", "k"]], [0, 1], "'unrolled' gives 1 values for the 2 loop names of unrolled_names entry 0"),
        ([["i"]], [0, 1, 2], "'unrolled' gives 2 values for the 1 loop names of unrolled_names entry 0"),
    ],
)  # fmt: skip
def test_a_malformed_unrolled_iteration_is_refused(names, unrolled, match):
    k = copy_kernel()
    program = k.program()
    if names is not None:
        program["unrolled_names"] = names
    program["body"][0]["unrolled"] = unrolled
    refused(write_neff(program), match)


def test_a_well_formed_unrolled_iteration_loads():
    """The counterpart of the refusals above: the same kernel with valid fields loads."""
    k = copy_kernel()
    program = k.program()
    program["unrolled_names"] = [["i", "k"], ["i"]]
    program["body"][0]["unrolled"] = [0, 1, 2]
    program["body"][1]["unrolled"] = [1, 3]
    loaded = nkirt.load(write_neff(program))
    envs = [inst.unrolled_env for inst in loaded.compiled[1]]
    assert envs == [{"i": 1, "k": 2}, {"i": 3}]
