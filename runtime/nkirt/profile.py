"""Results of a run: outputs, the Profile JSON (docs/profiling.md), a Chrome trace and a text summary."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

from nkirt.cost import DmaPlan
from nkirt.cost.tables import DMA_ENGINES
from nkirt.executor import RECORD_FIELDS, STALL_PORT, STALL_SEMAPHORE, StaticInstruction
from nkirt.program import QUEUES, Program

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
TOP_INSTRUCTIONS = 10


def busy_union(intervals: list[tuple[float, float]]) -> float:
    """Total time covered by at least one interval: in order of start (then end), each
    interval adds the part of it past the furthest end so far. `intervals`: (start, end)
    pairs, or an array of them (n x 2)."""
    if len(intervals) < 64:
        if isinstance(intervals, np.ndarray):
            intervals = [tuple(pair) for pair in intervals.tolist()]
        busy, reach = 0.0, float("-inf")
        for start, end in sorted(intervals):
            if end <= reach:
                continue
            busy += end - max(start, reach)
            reach = end
        return busy
    # the same sums vectorised (a run has ~10^5 intervals): the additions stay sequential,
    # in the same order, so the result is the same to the last bit
    pairs = np.asarray(intervals, dtype=np.float64)
    pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    starts, ends = pairs[:, 0], pairs[:, 1]
    reach = np.empty_like(ends)
    reach[0] = -np.inf
    np.maximum.accumulate(ends[:-1], out=reach[1:])
    grows = ends > reach
    gains = ends[grows] - np.maximum(starts[grows], reach[grows])
    # (np.add.accumulate adds one after another, in order: np.sum would add pairwise)
    return float(np.add.accumulate(gains)[-1]) if len(gains) else 0.0


def spill_bytes(instructions: list[StaticInstruction]) -> tuple[int, int]:
    """Bytes the DMAs of the PSUM spill moved: (stored to its HBM scratch, loaded back)."""
    save = reload = 0
    for inst in instructions:
        if inst.count and isinstance(inst.cost, DmaPlan):
            if any(ap.tensor.spill for ap in inst.outputs):
                save += inst.cost.bytes * inst.count
            elif any(ap.tensor.spill for ap in inst.inputs):
                reload += inst.cost.bytes * inst.count
    return save, reload


def build_profile(
    program: Program,
    instructions: list[StaticInstruction],
    records: list[tuple],
    dma_engine_busy_ns: float,
    hbm_busy_ns: float | None = None,
    warnings: list[dict] | None = None,
) -> dict[str, Any]:
    """The Profile JSON (docs/profiling.md): its stable core plus utilisation, DMA traffic and the costliest lines."""
    total = max(map(itemgetter(3), records), default=0.0)
    # the records' times as arrays (one conversion of the whole table: its numbers are exact
    # in float64), and each record's engine (its number in ENGINES)
    # (every record is a tuple of RECORD_FIELDS numbers: read as one flat sequence, faster
    # than numpy's discovery of a nested one)
    if records:
        flat = np.fromiter(chain.from_iterable(records), np.float64, RECORD_FIELDS * len(records))
        table = flat.reshape(len(records), RECORD_FIELDS)
    else:
        table = np.zeros((0, 5))
    number = {engine: k for k, engine in enumerate(ENGINES)}
    of_instruction = np.array([number.get(i.engine, -1) for i in instructions] or [-1])
    engine_of = of_instruction[table[:, 0].astype(np.int64)]
    start, busy_end, completion, stall_from = (
        np.ascontiguousarray(table[:, k]) for k in range(1, 5)
    )
    engines = {}
    for k, engine in enumerate(ENGINES):
        mine = engine_of == k
        count = int(np.count_nonzero(mine))
        starts, ends = start[mine], busy_end[mine]
        busy = busy_union(np.column_stack((starts, ends)))
        # from when an instance heads its queue (waiting on semaphores included) to its end
        active = busy_union(np.column_stack((stall_from[mine], ends)))
        engines[engine] = {
            "busy_ns": busy,
            "instructions": count,
            "utilization": busy / total if total else 0.0,
            "active_ns": active,
            "active": active / total if total else 0.0,
            # from start to completion: the instruction until its results are written
            "executing_ns": busy_union(np.column_stack((starts, completion[mine]))),
        }
    dma_bytes = sum(
        inst.cost.bytes * inst.count for inst in instructions if isinstance(inst.cost, DmaPlan)
    )
    engines["dma"]["bytes"] = dma_bytes
    spill_save, spill_reload = spill_bytes(instructions)
    # share of the 16 DMA engines' capacity spent moving data (the rest: idle or fixed costs)
    engines["dma"]["engine_utilization"] = (
        dma_engine_busy_ns / (DMA_ENGINES * total) if total else 0.0
    )
    if hbm_busy_ns is not None:
        # share of the core's measured sustained HBM-side DMA rate in use (trn1)
        engines["dma"]["hbm_rate_utilization"] = hbm_busy_ns / total if total else 0.0
    bottleneck = max(ENGINES, key=lambda e: engines[e]["busy_ns"]) if records else "none"
    # per source instruction (`site`): an unrolled loop's copies of one instruction count
    # together, as the instances of a kept loop's instruction do
    by_site: dict[int, list] = {}
    for i in instructions:
        if i.count:
            row = by_site.get(i.site)
            if row is None:
                by_site[i.site] = [i, i.busy_ns, i.count]
            else:
                row[1] += i.busy_ns
                row[2] += i.count
    ranked = sorted(by_site.values(), key=lambda row: row[1], reverse=True)[:TOP_INSTRUCTIONS]
    return {
        "kernel": program.kernel,
        "target": program.target,
        "total_ns": total,
        "instructions": len(records),
        "bottleneck": bottleneck,
        "engines": engines,
        "dma_bytes": dma_bytes,
        "dma_bandwidth_gbps": dma_bytes / total if total else 0.0,  # B/ns == GB/s
        "spill_save_bytes": spill_save,
        "spill_reload_bytes": spill_reload,
        "warnings": list(warnings or ()),
        "top_instructions": [
            {
                "op": i.op,
                "engine": i.engine,
                "queue": QUEUES[i.queue],
                "loc": i.where,
                "total_ns": busy_ns,
                "count": count,
            }
            for i, busy_ns, count in ranked
        ],
    }


def _us(ns: int) -> float:
    """Integer nanoseconds as trace-event microseconds: at most three decimals, so a reader
    that multiplies by 1000 and rounds (Perfetto, Chrome) gets the integer back exactly."""
    return ns / 1000


def build_trace(
    program: Program, instructions: list[StaticInstruction], records: list[tuple]
) -> dict[str, Any]:
    """Chrome/Perfetto trace events: one track per queue, slices named `op file:line`,
    semaphore stalls as `wait` slices with a flow arrow from the producer.

    Every slice's start and end are whole nanoseconds computed before its duration (`dur` is
    end - start), so slices of one track never overlap after a reader converts them back to
    integer nanoseconds; Perfetto drops a complete event that overlaps the previous one on its
    track. A flow starts inside the producer's slice and ends inside the waiting instruction's
    slice (`"bp": "e"`: bound to the enclosing slice), so each arrow joins the two slices."""
    pid = 1
    events: list[dict[str, Any]] = [
        {
            "ph": "M",
            "pid": pid,
            "tid": 0,
            "name": "process_name",
            "args": {"name": f"{program.kernel} ({program.target})"},
        }
    ]
    used = sorted({r[7] for r in records})
    for q in used:
        events.append(
            {
                "ph": "M",
                "pid": pid,
                "tid": q + 1,
                "name": "thread_name",
                "args": {"name": QUEUES[q]},
            }
        )
        events.append(
            {
                "ph": "M",
                "pid": pid,
                "tid": q + 1,
                "name": "thread_sort_index",
                "args": {"sort_index": q},
            }
        )
    # A queue may start an instance before the previous one ends (background LoadStationary,
    # a DMA queue setting up its next transfer): each slice starts where its track is free, so
    # slices never overlap; args keep the exact start.
    track_end: dict[int, int] = defaultdict(int)
    # the slice shown for each record: (first ns, last ns) on its track
    shown_span: list[tuple[int, int]] = []
    for n, record in enumerate(records):
        index, start, busy_end, completion, stall_from, producer, stall, queue = record
        inst = instructions[index]
        tid = queue + 1
        free = track_end[tid]
        begin = max(round(start), free)
        end = max(round(busy_end), begin)
        waited_from = max(round(stall_from), free)
        if stall in (STALL_SEMAPHORE, STALL_PORT) and begin > waited_from:
            wait = {"ph": "X", "pid": pid, "tid": tid, "ts": _us(waited_from)}
            wait["dur"] = _us(begin - waited_from)
            if stall == STALL_SEMAPHORE and producer < 0:
                # ideal-waits timing: the data dependence itself, no semaphore producer
                wait["name"] = "wait data dependence"
                wait["cat"] = "semaphore"
            elif stall == STALL_SEMAPHORE:
                source = instructions[records[producer][0]]
                wait["name"] = f"wait {source.op} {source.short_where}"
                wait["cat"] = "semaphore"
                wait["args"] = {"producer_id": source.id, "producer_record": producer}
            else:
                # v2: the rival engine held the shared SBUF/PSUM port
                wait["name"] = "wait shared SBUF/PSUM port"
                wait["cat"] = "port"
            events.append(wait)
        events.append(
            {
                "ph": "X",
                "pid": pid,
                "tid": tid,
                "name": f"{inst.op} {inst.short_where}",
                "cat": inst.engine,
                "ts": _us(begin),
                "dur": _us(end - begin),
                "args": {
                    "id": inst.id,
                    "record": n,
                    "loc": inst.where,
                    "start_ns": start,
                    "completion_ns": completion,
                },
            }
        )
        shown_span.append((begin, end))
        if stall == STALL_SEMAPHORE and producer >= 0 and begin > waited_from:
            source_span = shown_span[producer]
            flow = {"pid": pid, "name": "semaphore", "cat": "semaphore", "id": n, "bp": "e"}
            src_tid = records[producer][7] + 1
            events.append({**flow, "ph": "s", "tid": src_tid, "ts": _us(_inside(*source_span))})
            events.append({**flow, "ph": "f", "tid": tid, "ts": _us(_inside(begin, end))})
        track_end[tid] = end
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def _inside(first: int, last: int) -> int:
    """A whole nanosecond inside the slice [first, last): where a flow binds to it."""
    return first + (last - first) // 2


@dataclass
class RunResult:
    """Outputs and timing of one `nkirt.execute`."""

    program: Program
    #: Output arrays by result name, in their storage dtype (empty after a timing-only run).
    outputs: dict[str, np.ndarray]
    profile: dict[str, Any]
    instructions: list[StaticInstruction] = field(repr=False)
    records: list[tuple] = field(repr=False)
    #: (program, instructions, records) of every core of an LNC launch (empty for one core).
    cores: list[tuple] = field(default_factory=list, repr=False)

    def trace(self) -> dict[str, Any]:
        if not self.cores:
            return build_trace(self.program, self.instructions, self.records)
        # one trace process per physical core; flow ids kept apart per core
        events = []
        for core, (program, instructions, records) in enumerate(self.cores):
            for event in build_trace(program, instructions, records)["traceEvents"]:
                event = {**event, "pid": core + 1}
                if event.get("name") == "process_name":
                    name = event["args"]["name"]
                    event["args"] = {"name": f"{name} core {core}"}
                if event.get("cat") == "semaphore" and "id" in event:
                    event["id"] = f"{core}.{event['id']}"
                events.append(event)
        return {"traceEvents": events, "displayTimeUnit": "ns"}

    def summary(self) -> str:
        return summarize(self.profile)

    def dependency_graph(self):
        """The run's instances as a networkx DiGraph: node n is the n-th instance issued
        (attributes op, engine, queue, loc, start, end, completion, ns), edges go from an
        instance to the next of its queue (kind "queue") and from the producer a semaphore
        wait was released by to the waiter (kind "semaphore"). The profile's `critical_path`
        is a path of this graph."""
        import networkx as nx

        graph = nx.DiGraph()
        last: dict[int, int] = {}
        for n, record in enumerate(self.records):
            index, start, busy_end, completion, _, producer, stall, queue = record
            inst = self.instructions[index]
            graph.add_node(
                n,
                op=inst.op,
                engine=inst.engine,
                queue=QUEUES[queue],
                loc=inst.where,
                start=start,
                end=busy_end,
                completion=completion,
            )
            if queue in last:
                graph.add_edge(last[queue], n, kind="queue")
            if stall == STALL_SEMAPHORE and producer >= 0:
                graph.add_edge(producer, n, kind="semaphore")
            last[queue] = n
        return graph


def summarize(profile: dict[str, Any]) -> str:
    total = profile["total_ns"]
    lines = [
        f"{profile['kernel']} on {profile['target']}: latency {total / 1000:,.3f} µs, "
        f"{profile['instructions']:,} instructions",
        f"  {'engine':<8}{'busy µs':>12}{'util':>8}{'instr':>10}",
    ]
    for engine in ENGINES:
        e = profile["engines"][engine]
        lines.append(
            f"  {engine:<8}{e['busy_ns'] / 1000:>12,.3f}{e['utilization']:>8.1%}"
            f"{e['instructions']:>10,}"
        )
    bounds = profile.get("bounds")
    if bounds is not None and bounds["latency_bound"]:
        lines.append(
            f"  latency-bound: no engine is active more than half the time (Explorer active time; busiest: "
            f"{bounds['busiest_engine']} {bounds['busiest_engine_share']:.0%}); the critical "
            "path below sets the latency"
        )
    else:
        lines.append(f"  bottleneck: {profile['bottleneck']}")
    for n, core in enumerate(profile.get("cores", ())):
        lines.append(
            f"  core {n} of LNC={profile['lnc']}: latency {core['total_ns'] / 1000:,.3f} µs, "
            f"{core['instructions']:,} instructions, bottleneck {core['bottleneck']}"
        )
    dma = f"  DMA: {profile['dma_bytes'] / 2**20:,.3f} MiB at {profile['dma_bandwidth_gbps']:,.1f} GB/s"
    hbm = profile["engines"]["dma"].get("hbm_rate_utilization")
    if hbm is not None:
        dma += f" achieved; sustained HBM rate in use {hbm:.0%} of the time"
    else:
        dma += " achieved"
    lines.append(dma)
    if profile.get("spill_save_bytes") or profile.get("spill_reload_bytes"):
        lines.append(
            f"  PSUM spill: {profile['spill_save_bytes']:,} bytes saved to HBM, "
            f"{profile['spill_reload_bytes']:,} bytes reloaded"
        )
    stack = profile.get("hbm_stack")
    if stack is not None:
        shared = f", shared by the {stack['cores']} cores" if stack["cores"] > 1 else ""
        lines.append(
            f"  HBM stack ({stack['gbps']:,.0f} GB/s{shared}): busy "
            f"{stack['utilization']:.0%} of the time"
        )
    summary = profile.get("summary")
    if summary is not None:
        lines += _explorer_lines(summary, bounds)
    traffic = profile.get("hbm_traffic")
    if traffic is not None and traffic["tensors"]:
        lines += _traffic_lines(traffic, summary["dma_transfer_total_bytes"])
    for w in profile.get("warnings", ()):
        times = f" ({w['count']:,} instances)" if w["count"] > 1 else ""
        lines.append(f"  warning: {w['message']}{times}")
    top = profile["top_instructions"][:5]
    if top:
        lines.append("  costliest instructions:")
        for item in top:
            lines.append(
                f"    {item['total_ns'] / 1000:>10,.3f} µs  {item['count']:>7,}×  "
                f"{item['op']:<16} {item['loc']}"
            )
    path = profile.get("critical_path")
    if path and path["by_instruction"]:
        lines += _critical_path_lines(path)
    return "\n".join(lines)


#: Summary keys shown by `nkic run`, in Explorer's names (all are in the profile JSON).
SHOWN_SUMMARY = (
    ("total_time", "s"),
    ("mfu_estimated_percent", "%"),
    ("hfu_estimated_percent", "%"),
    ("mbu_estimated_percent", "%"),
    ("dma_active_time_percent", "%"),
    ("tensor_engine_active_time_percent", "%"),
    ("vector_engine_active_time_percent", "%"),
    ("scalar_engine_active_time_percent", "%"),
    ("gpsimd_engine_active_time_percent", "%"),
    ("dma_transfer_average_bytes", "B"),
    ("dma_transfer_count", ""),
    ("matmul_instruction_count", ""),
)
SHOWN_BOUNDS = (
    "memory_bound",
    "memory_bound_ideal",
    "memory_bound_ideal_no_reloads",
    "compute_bound",
    "compute_bound_ideal_flops",
    "compute_bound_ideal_useful_flops",
    "perfect_pipeline",
)

#: the gaps between consecutive bounds, memory family, compute family, then the pipeline's
SHOWN_GAPS = (
    "dma_idle",
    "dma_inefficiency",
    "excess_traffic",
    "te_idle",
    "te_underutilization",
    "transpose",
    "pipeline_serialization",
)


def _explorer_lines(summary: dict[str, Any], bounds: dict[str, Any]) -> list[str]:
    lines = ["  summary (Neuron Explorer names):"]
    for key, unit in SHOWN_SUMMARY:
        value = summary[key]
        if unit == "s":
            text = f"{value:.6g} s"
        elif unit == "%":
            text = f"{value:.1f}"
        elif unit == "B":
            text = f"{value:,.0f}"
        else:
            text = f"{value:,}"
        lines.append(f"    {key:<36}{text}")
    lines.append("  performance bounds (µs, speed-up left):")
    for key in SHOWN_BOUNDS:
        speedup = bounds["bn_speedup"][key]
        left = f"{speedup:.2f}×" if speedup else "—"
        lines.append(f"    {key:<36}{bounds[key] * 1e6:>12,.1f}  {left}")
    engine = bounds["bottleneck_engine"] or "none (latency-bound)"
    lines.append(f"    {'bottleneck_engine':<36}{engine}")
    gaps = bounds["gaps"]
    total = summary["total_time"]
    lines.append("  performance gaps (µs, % of total_time):")
    for key in SHOWN_GAPS:
        if key.startswith("te_") or key == "transpose":
            if not summary["hardware_flops"]:
                continue  # no TensorE work: the compute family has nothing to say
        share = f"{gaps[key] / total:>7.1%}" if total else ""
        extra = ""
        if key == "excess_traffic":
            extra = f"  ({gaps['excess_traffic_share_of_bytes']:.1%} of the bytes moved)"
        elif key == "transpose":
            extra = f"  ({gaps['transpose_share_of_flops']:.1%} of the flops)"
        lines.append(f"    {key:<36}{gaps[key] * 1e6:>12,.1f}{share}{extra}")
    return lines


def _traffic_lines(traffic: dict[str, Any], moved: int, shown: int = 6) -> list[str]:
    lines = ["  DMA traffic per HBM tensor (MB; repeat = bytes moved ÷ size):"]
    for t in traffic["tensors"][:shown]:
        lines.append(
            f"    {t['name']:<20} {t['type']:<5} size {t['size_bytes'] / 1e6:>10,.3f}  moved "
            f"{t['transferred_bytes'] / 1e6:>10,.3f}  {t['repeat']:>6.1f}×"
        )
    if len(traffic["tensors"]) > shown:
        lines.append(f"    ... {len(traffic['tensors']) - shown} more in the profile JSON")
    excess = traffic["reload_excess_bytes"]
    if excess:
        top = traffic["input_loads_by_source"][0]
        lines.append(
            f"    input reloads: {excess / 1e6:,.3f} MB ({excess / moved:.1%} of the bytes "
            f"moved); most loaded at {top['loc']}: {top['tensor']}, {top['transfers']:,} "
            f"transfers, {top['bytes'] / 1e6:,.3f} MB"
        )
    repeating = sorted(
        (s for s in traffic["input_loads_by_source"] if s["repeated_bytes"]),
        key=lambda s: -s["repeated_bytes"],
    )
    if repeating:
        lines.append(
            "    repeated loads, the same elements again in each iteration of the loops named: "
            + "; ".join(
                f"{s['loc']} {s['tensor']} {s['repeated_bytes'] / 1e6:,.3f} MB over "
                f"{', '.join(s['repeats_along'])}"
                for s in repeating[:3]
            )
        )
    lines.append(
        "  DMA transfers by source line (P partitions × bytes per descriptor; ≥ 4 KiB is efficient):"
    )
    for line in traffic["transfers_by_source"][:4]:
        shape = f"{line['partitions']}×{line['descriptor_bytes']:,.0f} B"
        small = "  < 4 KiB" if line["descriptor_bytes"] < 4096 else ""
        lines.append(
            f"    {line['loc']:<28} {line['direction']:<5} {line['tensor']:<14} "
            f"{line['transfers']:>7,}×  {line['bytes'] / 1e6:>10,.3f} MB {line['share']:>6.1%}  "
            f"{shape}{small}"
        )
    return lines


def _critical_path_lines(path: dict[str, Any], shown: int = 8) -> list[str]:
    segments = path["by_instruction"][:shown]
    lines = [
        f"  critical path: {path['steps']:,} dependent instances; time per instruction "
        "(instances, source <- call sites, first .. last iteration):"
    ]
    for seg in segments:
        first, last = seg["first_iteration"], seg["last_iteration"]
        its = ", ".join(f"{k}={v}" for k, v in first.items())
        if last != first:
            its += " .. " + ", ".join(f"{k}={v}" for k, v in last.items())
        where = seg["loc"] + "".join(f" <- {site}" for site in seg["stack"])
        tensors = f" {seg['tensors']}" if seg["engine"] == "dma" else ""
        lines.append(
            f"    {seg['time_ns'] / 1000:>10,.3f} µs  {seg['count']:>7,}×  "
            f"{seg['op']}{tensors} at {where}" + (f" [{its}]" if its else "")
        )
    return lines
