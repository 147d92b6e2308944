"""`nkic run --trace` / `--profile` files of a compiled kernel: structure of the JSON."""

from __future__ import annotations

import json

from click.testing import CliRunner

from nkic.cli import cli

from .conftest import EXAMPLES, compile_neff, spec

QUEUE_NAMES = {"tensor", "vector", "scalar", "gpsimd"} | {f"dma{i}" for i in range(16)}


def test_trace_and_profile_files_have_the_documented_structure(tmp_path):
    args = {"lhsT": spec((512, 256)), "rhs": spec((512, 1024))}
    neff = tmp_path / "k.neff"
    neff.write_bytes(compile_neff(EXAMPLES / "matmul_hoisted.py", "matmul_hoisted", args, "trn1"))
    trace, profile = tmp_path / "trace.json", tmp_path / "profile.json"
    out = CliRunner().invoke(
        cli,
        ["run", str(neff), "--timing-only", "--trace", str(trace), "--profile", str(profile)],
        catch_exceptions=False,
    )
    assert out.exit_code == 0, out.output
    assert "latency" in out.output.splitlines()[0]

    doc = json.loads(trace.read_text())
    assert set(doc) >= {"traceEvents"} and doc["displayTimeUnit"] == "ns"
    events = doc["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert set(threads.values()) <= QUEUE_NAMES
    assert {"tensor", "vector"} <= set(threads.values())
    assert len([name for name in threads.values() if name.startswith("dma")]) >= 2
    slices = [e for e in events if e["ph"] == "X"]
    for e in slices:
        assert {"pid", "tid", "name", "ts", "dur", "cat"} <= set(e)
        assert e["tid"] in threads and e["dur"] >= 0
    work = [e for e in slices if e["cat"] != "semaphore"]
    assert all("matmul_hoisted.py:" in e["name"] for e in work)
    assert all(e["args"]["completion_ns"] >= e["args"]["start_ns"] for e in work)
    waits = [e for e in slices if e["cat"] == "semaphore"]
    assert waits and all(e["name"].startswith("wait ") for e in waits)
    flows = [e for e in events if e["ph"] in "sf"]
    assert len(flows) == 2 * len(waits)
    for tid in threads:  # slices of one track never overlap
        mine = sorted((e["ts"], e["ts"] + e["dur"]) for e in slices if e["tid"] == tid)
        assert all(b[0] >= a[1] - 1e-9 for a, b in zip(mine, mine[1:]))

    prof = json.loads(profile.read_text())
    assert {"target", "total_ns", "instructions", "bottleneck", "engines"} <= set(prof)
    for engine in ("tensor", "vector", "scalar", "gpsimd", "dma"):
        assert {"busy_ns", "instructions"} <= set(prof["engines"][engine])
    assert prof["engines"]["dma"]["bytes"] > 0
    assert all(":" in item["loc"] for item in prof["top_instructions"])
