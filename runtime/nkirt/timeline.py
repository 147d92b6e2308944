"""A timeline picture of a run: one row per engine queue, one bar per instruction (matplotlib).

Rows with thousands of instructions are drawn as busy fractions per time bin instead, so a long
run still shows how busy each engine is (bars thinner than a pixel would mostly vanish)."""

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


#: A row with more bars than this is drawn as busy fractions per time bin: individual bars
#: would be thinner than a pixel and mostly vanish.
DENSE_ROW_BARS = 2000
DENSITY_BINS = 600


def _occupancy(spans: list[tuple[float, float]], width: float, bins: int):
    """Fraction of each of `bins` equal time bins of `width` covered by `spans` (start, dur)."""
    import numpy as np

    occ = np.zeros(bins)
    for start, dur in spans:
        first, last = int(start // width), min(int((start + dur) // width), bins - 1)
        if first == last:
            occ[first] += dur
            continue
        occ[first] += (first + 1) * width - start
        occ[first + 1 : last] += width
        occ[last] += start + dur - last * width
    return np.minimum(occ / width, 1.0)


def _draw_density(ax, y: float, families: dict, end: float) -> None:
    """One row as stacked busy fractions per time bin: waits as a pale full-height band, each
    instruction family as a bar whose height is the share of the bin it is busy."""
    width = (end or 1.0) / DENSITY_BINS
    lefts = [k * width for k in range(DENSITY_BINS)]
    if "semaphore" in families:
        waits = _occupancy(families["semaphore"], width, DENSITY_BINS)
        ax.bar(lefts, 0.8 * (waits > 0), width, y - 0.4, align="edge",
               color=_FAMILY_COLOURS["semaphore"], linewidth=0)  # fmt: skip
    base = [y + 0.4] * DENSITY_BINS  # the row's lower edge on screen (the y axis is inverted)
    for family, spans in families.items():
        if family == "semaphore":
            continue
        heights = 0.8 * _occupancy(spans, width, DENSITY_BINS)
        base = [b - h for b, h in zip(base, heights)]
        ax.bar(lefts, heights, width, base, align="edge", color=_FAMILY_COLOURS[family],
               linewidth=0)  # fmt: skip


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
        families = bars[tid]
        if sum(len(spans) for spans in families.values()) > DENSE_ROW_BARS:
            _draw_density(ax, y, families, end)
        else:
            for family, spans in families.items():
                ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=_FAMILY_COLOURS[family])
        used.update(families)
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
