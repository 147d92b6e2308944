"""A timeline picture of a run: one row per engine queue, one bar per instruction (matplotlib)."""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any

from nkirt.profile import RunResult

#: Bar colour per instruction family, so the picture reads at a glance.
_FAMILY_COLOURS = {
    "dma": "#4c72b0",
    "matmul": "#dd8452",
    "transpose": "#937860",
    "activation": "#55a868",
    "elementwise": "#8172b3",
    "copy": "#64b5cd",
    "reduce": "#c44e52",
    "other": "#8c8c8c",
    "semaphore": "#d3d3d3",
}


def _family(op: str, category: str) -> str:
    if category == "semaphore":
        return "semaphore"
    if op.startswith("dma"):
        return "dma"
    if "matmul" in op:
        return "matmul"
    if "transpose" in op:
        return "transpose"
    if op.startswith("activ") or op == "exponential":
        return "activation"
    if "reduce" in op or op.startswith("bn_") or op == "max8":
        return "reduce"
    if "copy" in op or op == "memset":
        return "copy"
    if op.startswith(("tensor_", "scalar_")):
        return "elementwise"
    return "other"


def render_svg(result_or_trace: RunResult | dict[str, Any], path: str | os.PathLike) -> None:
    """Draw the run's trace (a RunResult or its `trace()` dict) as an SVG (or any format
    matplotlib infers from `path`)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        raise ImportError(
            "the timeline picture needs matplotlib: pip install 'nkic[plot]'"
        ) from None
    trace = result_or_trace.trace() if isinstance(result_or_trace, RunResult) else result_or_trace
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    rows = sorted(names)
    bars: dict[int, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    end = 0.0
    for e in events:
        if e.get("ph") != "X":
            continue
        family = _family(e["name"].split(" ")[0], e.get("cat", ""))
        bars[e["tid"]][family].append((e["ts"], e["dur"]))
        end = max(end, e["ts"] + e["dur"])
    fig, ax = plt.subplots(figsize=(12, 1 + 0.45 * max(1, len(rows))))
    used = set()
    for y, tid in enumerate(rows):
        for family, spans in bars[tid].items():
            ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=_FAMILY_COLOURS[family])
            used.add(family)
    ax.set_yticks(range(len(rows)), [names[t] for t in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, end * 1.01 if end else 1)
    ax.set_xlabel("time (µs)")
    ax.set_title(next((e["args"]["name"] for e in events if e.get("name") == "process_name"), ""))
    handles = [Patch(color=_FAMILY_COLOURS[f], label=f) for f in _FAMILY_COLOURS if f in used]
    ax.legend(handles=handles, loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(os.fspath(path))
    plt.close(fig)
