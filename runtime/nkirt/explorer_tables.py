"""A run as Parquet tables named and shaped like Neuron Explorer's (optional: pyarrow).

`write_parquet(result, directory)` writes `Instruction.parquet`, `ActiveTime.parquet`,
`DmaPacket.parquet` and `Summary.parquet`, with the column names of Explorer's profile schema
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
    """The four tables as columns (name -> values)."""
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
    return {"Instruction": instruction, "ActiveTime": active, "DmaPacket": dma, "Summary": summary}


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
