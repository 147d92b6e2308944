"""A run as Parquet tables named and shaped like Neuron Explorer's (optional: pyarrow).

`write_parquet(result, directory)` writes `Instruction.parquet`, `ActiveTime.parquet`,
`DmaPacket.parquet`, `Summary.parquet` and `TensorInfo.parquet`, with the column names of Explorer's profile schema
(https://awsdocs-neuron.readthedocs-hosted.com/en/latest/tools/neuron-explorer/profile-schema-reference.html)
that the simulator can fill; timestamps and durations in ns as there. Queries written for
Explorer profiles (DuckDB, pandas) thus run on simulated ones. A DMA "packet" here is one DMA
instruction instance (the simulator does not split transfers into packets).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nkirt.analysis import instruction_flops
from nkirt.cost.tables import TARGETS
from nkirt.profile import RunResult
from nkirt.program import QUEUES

#: Explorer's engine names in `Instruction.engine` and `ActiveTime.engine`.
ENGINE_NAMES = {
    "tensor": "Tensor",
    "vector": "Vector",
    "scalar": "Scalar",
    "gpsimd": "GpSimd",
    "dma": "DMA",
}


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ImportError("Parquet tables need pyarrow: pip install 'nkic[parquet]'") from None
    return pyarrow, pyarrow.parquet


def explorer_tables(result: RunResult) -> dict[str, dict[str, list[Any]]]:
    """The five tables as columns (name -> values)."""
    table = TARGETS[result.program.target]
    instruction: dict[str, list[Any]] = {
        k: []
        for k in (
            "start_ts",
            "end_ts",
            "duration_ns",
            "engine",
            "opcode",
            "evt_wait_time_ns",
            "raw_flops",
            "adjusted_flops",
            "tensor_instruction_type",
            "nki_source_location",
        )
    }
    dma: dict[str, list[Any]] = {
        k: []
        for k in ("start_ts", "end_ts", "duration_ns", "queue_type", "queue", "transfer_bytes",
                  "throughput", "variable")
    }  # fmt: skip
    flops = {}
    busy: dict[str, list[tuple[float, float]]] = {e: [] for e in ENGINE_NAMES}
    for index, start, busy_end, completion, stall_from, _, _, queue in result.records:
        inst = result.instructions[index]
        if inst.engine == "dma":
            busy["dma"].append((start, busy_end))
            nbytes = inst.cost.bytes
            dma["start_ts"].append(round(start))
            dma["end_ts"].append(round(busy_end))
            dma["duration_ns"].append(round(busy_end - start))
            dma["queue_type"].append("data")
            dma["queue"].append(QUEUES[queue])
            dma["transfer_bytes"].append(nbytes)
            dma["throughput"].append(nbytes / (busy_end - start) if busy_end > start else 0.0)
            dma["variable"].append(", ".join(ap.tensor.name for ap in inst.outputs))
            continue
        if index not in flops:
            flops[index] = instruction_flops(inst, table) if inst.engine == "tensor" else None
        counted = flops[index]
        # an instruction executes until its results are written (the profile's `executing_ns`)
        busy[inst.engine].append((start, completion))
        instruction["start_ts"].append(round(start))
        instruction["end_ts"].append(round(completion))
        instruction["duration_ns"].append(round(completion - start))
        instruction["engine"].append(ENGINE_NAMES[inst.engine])
        instruction["opcode"].append(inst.op.upper())
        instruction["evt_wait_time_ns"].append(round(max(0.0, start - stall_from)))
        instruction["raw_flops"].append(counted[0] if counted else 0.0)
        instruction["adjusted_flops"].append(counted[1] if counted else 0.0)
        transpose = bool(counted and counted[2])
        instruction["tensor_instruction_type"].append(
            ("TRANSPOSE" if transpose else "REGULAR") if inst.engine == "tensor" else None
        )
        instruction["nki_source_location"].append(inst.where)
    active: dict[str, list[Any]] = {k: [] for k in ("engine", "start_ts", "end_ts", "duration_ns")}
    for engine, intervals in busy.items():
        reach_start = reach_end = None
        for start, end in sorted(intervals):
            if reach_end is not None and start <= reach_end:
                reach_end = max(reach_end, end)
                continue
            if reach_end is not None:
                _merged(active, engine, reach_start, reach_end)
            reach_start, reach_end = start, end
        if reach_end is not None:
            _merged(active, engine, reach_start, reach_end)
    summary = {key: [value] for key, value in result.profile["summary"].items()}
    return {
        "Instruction": instruction,
        "ActiveTime": active,
        "DmaPacket": dma,
        "Summary": summary,
        "TensorInfo": tensor_info(result),
    }


def tensor_info(result: RunResult) -> dict[str, list[Any]]:
    """Explorer's Tensor Viewer table for the kernel's inputs and outputs: `type` `IN` / `OUT`
    as the performance-bounds queries select them, `size` in bytes, and the `load_to_sbuf_*`
    reload columns (on hardware NULL for NKI kernels; here from the run's DMAs)."""
    program = result.program
    kinds: dict[str, str] = {t.name: "OUT" for t in program.outputs}
    tensors = {t.name: t for t in (*program.outputs, *program.inputs)}
    for t in program.inputs:
        kinds[t.name] = "IN"  # an input the kernel also writes: still an input
    loads: dict[str, list[int]] = {name: [0, 0] for name in tensors}  # [DMAs, bytes]
    for inst in result.instructions:
        if inst.engine != "dma" or not inst.count:
            continue
        if not any(ap.buffer == "sbuf" for ap in inst.outputs):
            continue
        for ap in inst.inputs:
            if ap.tensor.name in loads:
                counted = loads[ap.tensor.name]
                counted[0] += inst.count
                counted[1] += ap.shape.elements * ap.itemsize * inst.count
    columns: dict[str, list[Any]] = {
        k: []
        for k in ("variable_name", "type", "shape", "size", "pcore_idx",
                  "load_to_sbuf_avg_size_bytes", "load_to_sbuf_total_size_bytes",
                  "load_to_sbuf_dma_count", "load_to_sbuf_repeat_factor")
    }  # fmt: skip
    for name, t in tensors.items():
        count, nbytes = loads[name]
        columns["variable_name"].append(name)
        columns["type"].append(kinds[name])
        columns["shape"].append(str(list(t.shape)))
        columns["size"].append(t.nbytes)
        columns["pcore_idx"].append(0)
        columns["load_to_sbuf_avg_size_bytes"].append(nbytes / count if count else 0.0)
        columns["load_to_sbuf_total_size_bytes"].append(nbytes)
        columns["load_to_sbuf_dma_count"].append(count)
        columns["load_to_sbuf_repeat_factor"].append(nbytes / t.nbytes if t.nbytes else 0.0)
    return columns


def _merged(active: dict[str, list[Any]], engine: str, start: float, end: float) -> None:
    active["engine"].append(ENGINE_NAMES[engine])
    active["start_ts"].append(round(start))
    active["end_ts"].append(round(end))
    active["duration_ns"].append(round(end - start))


def write_parquet(result: RunResult, directory: str | os.PathLike) -> list[Path]:
    """Write the tables as `<Name>.parquet` files in `directory` (created if needed)."""
    pa, pq = _pyarrow()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, columns in explorer_tables(result).items():
        path = out / f"{name}.parquet"
        pq.write_table(pa.table(columns), path)
        written.append(path)
    return written
