"""Parquet tables named like Neuron Explorer's agree with the profile they come from."""

from __future__ import annotations

import nkirt
import pytest
from neff_builder import Kernel

pq = pytest.importorskip("pyarrow.parquet")

from nkirt.explorer_tables import write_parquet  # noqa: E402


def two_tiles() -> tuple[Kernel, int, int, int, int]:
    """A kernel with input x, output y and SBUF tiles a and b, all [128, 512] bf16."""
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [128, 512])
    y = k.output("y", "bfloat16", [128, 512])
    a = k.sbuf("a", "bfloat16", [128, 512])
    b = k.sbuf("b", "bfloat16", [128, 512], byte=1024)
    return k, x, y, a, b


def small_run():
    k, x, y, a, b = two_tiles()
    load = k.dma(k.ap(a), k.ap(x))
    act = k.inst(
        "activation", "scalar", {"dst": k.ap(b), "data": k.ap(a)}, {"op": "exp"}, waits=[(load, 0)]
    )
    k.dma(k.ap(y), k.ap(b), waits=[(act, 0)], queue="dma5")
    return nkirt.execute(nkirt.load(k.neff()), timing_only=True)


def test_tables_carry_explorers_names_and_the_profiles_numbers(tmp_path):
    result = small_run()
    written = write_parquet(result, tmp_path / "tables")
    assert sorted(p.name for p in written) == [
        "ActiveTime.parquet",
        "DmaPacket.parquet",
        "Instruction.parquet",
        "Summary.parquet",
        "TensorInfo.parquet",
    ]
    inst = pq.read_table(tmp_path / "tables" / "Instruction.parquet").to_pydict()
    assert inst["opcode"] == ["ACTIVATION"] and inst["engine"] == ["Scalar"]
    assert inst["nki_source_location"][0].endswith("test_kernel.py:12")
    assert inst["evt_wait_time_ns"][0] > 0  # it waited for the load
    dma = pq.read_table(tmp_path / "tables" / "DmaPacket.parquet").to_pydict()
    summary = result.profile["summary"]
    assert sum(dma["transfer_bytes"]) == summary["dma_transfer_total_bytes"] == 2 * 128 * 512 * 2
    assert dma["variable"] == ["a", "y"]
    active = pq.read_table(tmp_path / "tables" / "ActiveTime.parquet").to_pydict()
    scalar = sum(d for e, d in zip(active["engine"], active["duration_ns"]) if e == "Scalar")
    assert scalar == pytest.approx(summary["scalar_engine_active_time"] * 1e9, abs=1)
    row = pq.read_table(tmp_path / "tables" / "Summary.parquet").to_pydict()
    assert row["total_time"] == [summary["total_time"]]
    assert row["mfu_estimated_percent"] == [summary["mfu_estimated_percent"]]


def test_tensor_info_answers_the_redundant_transfer_query(tmp_path):
    """The investigation's step 1 on the tables: necessary bytes are the IN and OUT sizes, and
    an input loaded twice into SBUF has a repeat factor of 2."""
    k, x, y, a, b = two_tiles()
    first = k.dma(k.ap(a), k.ap(x))
    second = k.dma(k.ap(b), k.ap(x), queue="dma3")
    k.dma(k.ap(y), k.ap(b), waits=[(first, 0), (second, 0)], queue="dma5")
    result = nkirt.execute(nkirt.load(k.neff()), timing_only=True)
    write_parquet(result, tmp_path)
    info = pq.read_table(tmp_path / "TensorInfo.parquet").to_pydict()
    rows = {name: i for i, name in enumerate(info["variable_name"])}
    size = 128 * 512 * 2
    assert [info["type"][rows["x"]], info["type"][rows["y"]]] == ["IN", "OUT"]
    assert info["size"] == [size, size] and info["shape"][rows["x"]] == "[128, 512]"
    necessary = sum(s for s, t in zip(info["size"], info["type"]) if t in ("IN", "OUT"))
    assert necessary == result.profile["summary"]["inputs_outputs_weights_size_bytes"]
    x_row = rows["x"]
    assert info["load_to_sbuf_dma_count"][x_row] == 2
    assert info["load_to_sbuf_total_size_bytes"][x_row] == 2 * size
    assert info["load_to_sbuf_avg_size_bytes"][x_row] == size
    assert info["load_to_sbuf_repeat_factor"][x_row] == 2.0
    assert info["load_to_sbuf_dma_count"][rows["y"]] == 0
