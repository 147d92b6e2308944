"""The resource report of a compiled kernel: what it uses of each core, beside each limit.

Read from the allocated IR and its schedule, without running the kernel: SBUF and PSUM use
(peak bytes per partition and every tensor's placement and live range), instructions per
engine (static and executed: loop trip counts multiplied out), DMA transfers and the bytes
and byte ranges they read and write of each HBM tensor, and semaphore waits.
"""

from __future__ import annotations

from collections import defaultdict

from .backend.schedule import schedule_once
from .ir.core import Alloc, Inst, Kernel, Loop, Tensor
from .ir.target import target as target_info
from .passes.checks.accesses import is_write
from .passes.checks.regions import convert, footprint
from .passes.regions import loop_ranges

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")


def build_report(kernels: list[Kernel]) -> dict:
    """The report of one launch: one entry per core (one for LNC=1)."""
    first = kernels[0]
    return {
        "kernel": first.name,
        "target": first.target,
        "lnc": len(kernels),
        "cores": [_core(k) for k in kernels],
    }


def _core(kernel: Kernel) -> dict:
    tgt = target_info(kernel.target)
    sched = schedule_once(kernel)
    return {
        "core": kernel.core,
        "sbuf": _on_chip(kernel, "sbuf", tgt.sbuf_partition_bytes),
        "psum": _psum(kernel, tgt),
        "instructions": _instructions(sched),
        "dma": _dma(sched, tgt.dma_queues),
        "semaphores": {
            "waits": sum(len(s.waits) for s in sched.insts),
            "waiting_instructions": sum(1 for s in sched.insts if s.waits),
            "limit": None,
        },
    }


def _live_lines(kernel: Kernel) -> dict[Tensor, tuple[int, int]]:
    """First and last source line of each on-chip tensor's allocation and uses."""
    lines: dict[Tensor, list[int]] = {}
    for op, _ in kernel.walk():
        if isinstance(op, Alloc) and op.result.on_chip:
            lines[op.result] = [op.loc.line, op.loc.line]
        elif isinstance(op, Inst):
            for _, ap in op.aps():
                span = lines.get(ap.tensor)
                if span is not None:
                    span[0], span[1] = min(span[0], op.loc.line), max(span[1], op.loc.line)
    return {t: (a, b) for t, (a, b) in lines.items()}


def _on_chip(kernel: Kernel, buffer: str, limit: int) -> dict:
    tensors = []
    top = 0
    lines = _live_lines(kernel)
    for t in lines:
        if t.buffer != buffer or t.address is None:
            continue
        partition, byte = t.address
        slots, stride = (t.rotate[1], t.rotate[2]) if t.rotate else (1, t.bytes_per_partition)
        end = byte + (slots - 1) * stride + t.bytes_per_partition
        top = max(top, end)
        tensors.append(
            {
                "name": t.label or t.name,
                "shape": list(t.shape),
                "dtype": t.dtype,
                "partitions": [partition, partition + t.num_partitions - 1],
                "bytes": [byte, end - 1],
                "bytes_per_partition": t.bytes_per_partition,
                "slots": slots,
                "live_lines": list(lines[t]),
            }
        )
    return {"peak_bytes_per_partition": top, "limit_bytes_per_partition": limit, "tensors": tensors}


def _psum(kernel: Kernel, tgt) -> dict:
    out = _on_chip(kernel, "psum", tgt.psum_partition_bytes)
    banks = set()
    for item in out["tensors"]:
        lo, hi = item["bytes"]
        banks.update(range(lo // tgt.psum_bank_bytes, hi // tgt.psum_bank_bytes + 1))
    out["banks"] = len(banks)
    out["limit_banks"] = tgt.psum_partition_bytes // tgt.psum_bank_bytes
    return out


def _executions(loops: tuple[Loop, ...]) -> int:
    n = 1
    for lp in loops:
        n *= lp.trip_count
    return n


def _instructions(sched) -> dict:
    out = {e: {"static": 0, "executed": 0} for e in ENGINES}
    for s in sched.insts:
        engine = "dma" if s.queue.startswith("dma") else s.engine
        out[engine]["static"] += 1
        out[engine]["executed"] += _executions(s.loops)
    return out


def _dma(sched, queues: int) -> dict:
    tensors: dict[str, dict] = defaultdict(
        lambda: {
            side: {"transfers": 0, "bytes": 0, "ranges": [], "elements": []}
            for side in ("read", "written")
        }
    )
    transfers = 0
    used = set()
    for s in sched.insts:
        if not s.queue.startswith("dma") or not s.runs:
            continue
        runs = _executions(s.loops)
        used.update(s.queue_of(n) for n in range(min(runs, s.queues)))
        transfers += runs
        ranges = loop_ranges(s.loops)
        for name, ap in s.inst.aps():
            t = ap.tensor
            if t.on_chip or (ap.dynamic is not None and name == ap.dynamic.index):
                continue
            side = tensors[t.label or t.name]["written" if is_write(s.inst, name) else "read"]
            side["transfers"] += runs
            elems = 1
            for _, n in ap.pattern:
                elems *= n
            side["bytes"] += elems * ap.itemsize * runs
            box = footprint(ap, ranges)
            ((lo, hi),) = convert(box, "flat").intervals(ranges)
            side["ranges"].append([lo, hi])
            if box.kind == "elements":
                cells = [[a, b + 1] for a, b in box.intervals(ranges)]
                if cells not in side["elements"]:
                    side["elements"].append(cells)
    for entry in tensors.values():
        for side in entry.values():
            side["ranges"] = _union(side["ranges"])
    return {
        "transfers": transfers,
        "bytes": sum(s["bytes"] for e in tensors.values() for s in e.values()),
        "queues_used": len(used),
        "limit_queues": queues,
        "tensors": dict(tensors),
    }


def _union(ranges: list[list[int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def render_report(report: dict) -> str:
    """The report as text, one block per core."""
    lines = [f"resource report: {report['kernel']} on {report['target']}, LNC={report['lnc']}"]
    for core in report["cores"]:
        if report["lnc"] > 1:
            lines.append(f"core {core['core']}:")
        lines += _render_core(core)
    return "\n".join(lines)


def _tensor_lines(tensors: list[dict]) -> list[str]:
    out = []
    for t in tensors:
        slots = f" x{t['slots']} slots" if t["slots"] > 1 else ""
        out.append(
            f"    {t['name']:<16} {t['dtype']}{t['shape']}{slots}: partitions "
            f"{t['partitions'][0]}..{t['partitions'][1]}, bytes {t['bytes'][0]}..{t['bytes'][1]}, "
            f"lines {t['live_lines'][0]}..{t['live_lines'][1]}"
        )
    return out


def _pct(n: int, limit: int) -> str:
    return f"{n:,} of {limit:,} ({n / limit:.1%})" if limit else f"{n:,}"


def _render_core(core: dict) -> list[str]:
    sbuf, psum, dma = core["sbuf"], core["psum"], core["dma"]
    out = [
        f"  SBUF   {_pct(sbuf['peak_bytes_per_partition'], sbuf['limit_bytes_per_partition'])} "
        "bytes per partition (highest byte in use)",
    ]
    out += _tensor_lines(sbuf["tensors"])
    out.append(
        f"  PSUM   {_pct(psum['banks'], psum['limit_banks'])} banks, "
        f"{_pct(psum['peak_bytes_per_partition'], psum['limit_bytes_per_partition'])} bytes per "
        "partition"
    )
    out += _tensor_lines(psum["tensors"])
    counts = ", ".join(
        f"{e} {c['static']}/{c['executed']:,}" for e, c in core["instructions"].items()
    )
    out.append(f"  instructions (static/executed): {counts}")
    out.append(
        f"  DMA    {dma['transfers']:,} transfers, {dma['bytes']:,} bytes, "
        f"{_pct(dma['queues_used'], dma['limit_queues'])} queues"
    )
    for name, sides in dma["tensors"].items():
        for side, info in sides.items():
            if info["transfers"]:
                ranges = ", ".join(f"{lo}..{hi}" for lo, hi in info["ranges"])
                boxes = "; ".join(
                    "[" + ", ".join(f"{a}:{b}" for a, b in box) + "]" for box in info["elements"]
                )
                out.append(
                    f"    {name:<16} {side:<7} {info['transfers']:,} transfers, "
                    f"{info['bytes']:,} bytes, byte ranges {ranges}"
                    + (f" (elements {boxes})" if boxes else "")
                )
    sem = core["semaphores"]
    out.append(
        f"  semaphores: {sem['waits']:,} waits in {sem['waiting_instructions']:,} instructions "
        "(limit not documented)"
    )
    return out
