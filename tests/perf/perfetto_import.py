"""What Perfetto's trace processor keeps of a Chrome JSON trace: a re-implementation of its
import rules for complete events (`"ph": "X"`) and v1 flow events (`"s"`/`"f"`).

The rules, as the trace processor applies them (src/trace_processor/importers/json in
https://github.com/google/perfetto):

* `ts` and `dur` are microseconds; each is converted on its own to integer nanoseconds with
  `llround(value * 1000)`.
* Events are sorted by timestamp (stable for equal timestamps).
* Per track (pid, tid) a stack of open slices: a new complete event first closes every open
  slice that ends at or before its start; if it then ends after the innermost open slice, it is
  dropped (stat `slice_drop_overlapping_complete_event`), else it nests inside it.
* A flow start (`s`) binds to the innermost open slice of its track; a flow end (`f`) with
  `"bp": "e"` binds to the innermost open slice of its track, without it to the next slice
  that begins on the track. Flows match on (cat, name, id).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


def to_ns(us: float) -> int:
    value = us * 1000.0
    return int(math.floor(value + 0.5)) if value >= 0 else -int(math.floor(-value + 0.5))


@dataclass
class Imported:
    slices: list[dict] = field(default_factory=list)  # kept complete events, ts/dur in ns
    dropped: list[dict] = field(default_factory=list)  # slice_drop_overlapping_complete_event
    #: flow id -> (source slice, destination slice); None where nothing could be bound
    flows: dict[object, tuple[dict | None, dict | None]] = field(default_factory=dict)


def import_trace(doc: dict) -> Imported:
    events = [e for e in doc["traceEvents"] if e.get("ph") in ("X", "s", "f")]
    order = sorted(range(len(events)), key=lambda i: to_ns(events[i]["ts"]))
    out = Imported()
    stacks: dict[tuple, list[dict]] = {}
    open_flows: dict[tuple, dict | None] = {}
    waiting_next: dict[tuple, list[tuple]] = {}  # flows bound to the next slice of a track
    for i in order:
        e = events[i]
        track = (e.get("pid"), e.get("tid"))
        stack = stacks.setdefault(track, [])
        ts = to_ns(e["ts"])
        if e["ph"] == "X":
            end = ts + to_ns(e["dur"])
            while stack and stack[-1]["end"] <= ts:
                stack.pop()
            if stack and end > stack[-1]["end"]:
                out.dropped.append(e)
                continue
            row = {**e, "ts_ns": ts, "end": end}
            out.slices.append(row)
            stack.append(row)
            for key in waiting_next.pop(track, []):
                out.flows[key[2]] = (open_flows.pop(key, None), row)
            continue
        key = (e.get("cat"), e.get("name"), e.get("id"))
        top = stack[-1] if stack else None
        if e["ph"] == "s":
            open_flows[key] = top
        elif e.get("bp") == "e":
            out.flows[key[2]] = (open_flows.pop(key, None), top)
        else:
            waiting_next.setdefault(track, []).append(key)
    return out
