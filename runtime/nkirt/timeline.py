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

#: Legend label per family where the family name is not what a reader expects.
_LABELS = {"semaphore": "wait"}


def _family(op: str, category: str) -> str:
    if category in ("semaphore", "port"):
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


#: Picture formats by file extension (all drawn by matplotlib's Agg, SVG, PDF or PS canvases).
FORMATS = ("svg", "png", "pdf", "jpg", "jpeg", "ps", "eps", "webp", "tif", "tiff")

#: Narrowest bar drawn, as a share of the time axis (about one pixel of the picture): a single
#: short transfer in a long run stays visible.
MIN_BAR = 1 / 1200


def picture_format(path: str | os.PathLike) -> str:
    """The picture format `path` asks for; ValueError naming the known ones otherwise."""
    ext = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    if ext not in FORMATS:
        raise ValueError(
            f"cannot draw a timeline as {'.' + ext if ext else 'a file without extension'}: "
            f"use one of {', '.join('.' + f for f in FORMATS)}"
        )
    return ext


def _time_unit(end_ns: float) -> tuple[str, float]:
    """A unit for a time axis reaching `end_ns`, and nanoseconds per unit."""
    if end_ns >= 2e6:
        return "ms", 1e6
    if end_ns >= 2e3:
        return "µs", 1e3
    return "ns", 1.0


def _format_ns(ns: float) -> str:
    unit, scale = _time_unit(ns)
    return f"{ns / scale:,.3f} {unit}" if unit != "ns" else f"{ns:,.0f} ns"


def _busiest_engine(events: list[dict], total_us: float) -> str:
    """The engine (slice category) busy longest (the union of its slices), or "latency" when
    none is busy more than half the run, as the profile's `bottleneck`."""
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") not in ("semaphore", "port"):
            spans[e.get("cat", "")].append((e["ts"], e["ts"] + e["dur"]))
    busy = {}
    for engine, intervals in spans.items():
        total, reach = 0.0, float("-inf")
        for start, end in sorted(intervals):
            if end > reach:
                total += end - max(start, reach)
                reach = end
        busy[engine] = total
    busiest = max(busy, key=busy.get) if busy else None
    return busiest if busiest and busy[busiest] > total_us / 2 else "latency"


def render_svg(result_or_trace: RunResult | dict[str, Any], path: str | os.PathLike) -> None:
    """Draw the run's trace (a RunResult or its `trace()` dict) as a picture whose format is
    `path`'s extension (`FORMATS`): see `timeline_figure`."""
    fmt = picture_format(path)
    timeline_figure(result_or_trace).savefig(os.fspath(path), format=fmt)


def timeline_figure(result_or_trace: RunResult | dict[str, Any]):
    """A matplotlib Figure (no pyplot, no global backend) with one row per queue, time across
    in ns, µs or ms, the total latency and the bottleneck engine in the title and the legend
    beside the rows."""
    try:
        import matplotlib  # noqa: F401  (the package itself: its absence is the usual failure)
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError:
        raise ImportError(
            "the timeline picture needs matplotlib: pip install 'nkic[plot]'"
        ) from None
    if isinstance(result_or_trace, RunResult):
        trace = result_or_trace.trace()
        total_ns = result_or_trace.profile["total_ns"]
        bottleneck = result_or_trace.profile["bottleneck"]
    else:
        trace, total_ns, bottleneck = result_or_trace, None, None
    events = trace["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    rows = sorted(names)
    bars: dict[int, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    end_us = 0.0
    for e in events:
        if e.get("ph") != "X":
            continue
        family = _family(e["name"].split(" ")[0], e.get("cat", ""))
        bars[e["tid"]][family].append((e["ts"], e["dur"]))
        end_us = max(end_us, e["ts"] + e["dur"])
    if total_ns is None:
        total_ns = end_us * 1000
        bottleneck = _busiest_engine(events, end_us)
    unit, per_unit = _time_unit(max(total_ns, end_us * 1000))
    scale = 1000 / per_unit  # trace µs -> axis unit
    end = end_us * scale
    min_width = (end or 1.0) * MIN_BAR
    fig = Figure(figsize=(12, 1.2 + 0.45 * max(1, len(rows))), layout="constrained")
    ax = fig.add_subplot()
    used = set()
    for y, tid in enumerate(rows):
        families = {
            f: [(ts * scale, dur * scale) for ts, dur in spans] for f, spans in bars[tid].items()
        }
        if sum(len(spans) for spans in families.values()) > DENSE_ROW_BARS:
            _draw_density(ax, y, families, end)
        else:
            for family, spans in families.items():
                widened = [(ts, max(dur, min_width)) for ts, dur in spans]
                edge = {} if family == "semaphore" else {"edgecolor": "white", "linewidth": 0.3}
                ax.broken_barh(widened, (y - 0.4, 0.8), facecolors=_FAMILY_COLOURS[family], **edge)
        used.update(families)
    ax.set_yticks(range(len(rows)), [names[t] for t in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, end * 1.01 if end else 1)
    ax.set_xlabel(f"time ({unit})")
    kernel = next((e["args"]["name"] for e in events if e.get("name") == "process_name"), "")
    if bottleneck in ("latency", "none", None):  # no engine busy more than half the time
        limit = "latency-bound (no engine is the bottleneck)"
    else:
        limit = f"bottleneck {bottleneck}"
    ax.set_title(f"{kernel}: latency {_format_ns(total_ns)}, {limit}")
    handles = [
        Patch(color=_FAMILY_COLOURS[f], label=_LABELS.get(f, f))
        for f in _FAMILY_COLOURS
        if f in used
    ]
    fig.legend(handles=handles, loc="outside right upper", fontsize="small")
    return fig
