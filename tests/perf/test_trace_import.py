"""Traces load whole into Perfetto: no dropped slice, every flow arrow joins the producer's
slice to the slice of the instruction that waited for it (see perfetto_import for the rules)."""

from __future__ import annotations

import json

import pytest

from .conftest import EXAMPLES, simulate, spec
from .perfetto_import import import_trace, to_ns


def check_trace_imports_whole(result) -> int:
    doc = json.loads(json.dumps(result.trace()))  # as a file reader sees it
    imported = import_trace(doc)
    assert imported.dropped == []
    for e in doc["traceEvents"]:
        if "ts" in e:  # whole nanoseconds: exact for readers that round and for those that cut
            assert e["ts"] * 1000 == pytest.approx(to_ns(e["ts"]), abs=1e-6)
    waits = {n for n, r in enumerate(result.records) if r[6] == 1 and r[5] >= 0}
    assert imported.flows, "the kernel has semaphore waits"
    assert set(imported.flows) <= waits
    for n, (source, dest) in imported.flows.items():
        assert source is not None and dest is not None
        assert dest["args"]["record"] == n
        assert source["args"]["record"] == result.records[n][5]
    flow_events = {e["id"]: e for e in doc["traceEvents"] if e["ph"] == "s"}
    for n, (source, _) in imported.flows.items():  # bound inside the slice, not at its edge
        assert (
            source["ts_ns"]
            <= to_ns(flow_events[n]["ts"])
            <= max(source["ts_ns"], source["end"] - 1)
        )
    return len(imported.slices)


def test_readme_matmul_trace_loads_without_drops_and_flows_bind_to_producers():
    args = {"lhsT": spec((512, 256)), "rhs": spec((512, 1024))}
    result = simulate(EXAMPLES / "matmul_tiled.py", "matmul_tiled", args, "trn2")
    assert check_trace_imports_whole(result) >= 80


def test_big_matmul_trace_loads_without_drops():
    args = {"lhsT": spec((4096, 2048)), "rhs": spec((4096, 8192))}
    result = simulate(EXAMPLES / "matmul_tiled.py", "matmul_tiled", args, "trn2")
    assert check_trace_imports_whole(result) > 10_000
