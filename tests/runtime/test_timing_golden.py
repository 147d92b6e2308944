"""The simulator's timing is pinned: every record of a few programs' timelines, exactly.

The programs are stored `.neff` files (golden/*.neff.gz), so compiler changes do not move
them: only the executor and the cost model do. They cover the per-instance timing paths:
affine loops on trn1 (sustained-rate DMA) and trn2 (TensorE throttling, shared HBM stack),
DMAs rotating over queues with iteration-dependent waits, a long run of back-to-back matmuls,
an LNC=2 launch and a collective between its cores. Each case keeps the SHA-256 of its
records (start, busy end, completion, stall, producer and queue of every instance, per core),
the total latency and the DMA engines' utilization.

Speed work on the executor must keep every value bit-identical. A deliberate change to the
timing model changes them: then rerun `python tests/runtime/test_timing_golden.py --update`
and commit golden/timing.json with the change that explains it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path

import nkirt
import pytest

GOLDEN = Path(__file__).parent / "golden"
EXPECTED = GOLDEN / "timing.json"
#: Which runs of each program are pinned (the what-if of ideal waits too, on two of them).
IDEAL_WAITS = ("matmul_blocked_mnk_trn2", "matmul_tiled_trn1")


def _runs() -> list[tuple[str, Path, bool]]:
    out = []
    for path in sorted(GOLDEN.glob("*.neff.gz")):
        name = path.name.removesuffix(".neff.gz")
        out.append((name, path, False))
        if name in IDEAL_WAITS:
            out.append((f"{name}+ideal_waits", path, True))
    return out


def timing(path: Path, ideal_waits: bool) -> dict:
    """The pinned figures of one timing-only run of the stored program at `path`."""
    program = nkirt.load(gzip.decompress(path.read_bytes()))
    result = nkirt.execute(program, {}, timing_only=True, ideal_waits=ideal_waits)
    timelines = [records for _, _, records in result.cores] or [result.records]
    digest = hashlib.sha256(json.dumps(timelines).encode()).hexdigest()
    profiles = result.profile.get("cores", [result.profile])
    return {
        "total_ns": result.profile["total_ns"],
        "instances": sum(len(t) for t in timelines),
        "records_sha256": digest,
        # the DMA engines' share of their capacity spent moving data (their busy time)
        "dma_engine_utilization": [p["engines"]["dma"]["engine_utilization"] for p in profiles],
    }


@pytest.mark.parametrize(("name", "path", "ideal_waits"), _runs(), ids=[r[0] for r in _runs()])
def test_timeline_is_bit_identical_to_the_pinned_one(name, path, ideal_waits):
    expected = json.loads(EXPECTED.read_text())[name]
    got = timing(path, ideal_waits)
    assert got == expected, (
        f"{name}: the timeline changed; if the timing model changed on purpose, rerun "
        "`python tests/runtime/test_timing_golden.py --update`"
    )


#: the pinned programs quick to run functionally (the others' matmuls take seconds)
FUNCTIONAL = (
    "all_reduce_lnc2_trn2",
    "matmul_lnc2_trn2",
    "matmul_tiled_trn1",
    "rotation_stride3_trn2",
    "softmax_trn2",
    "tiled_add_trn1",
)


@pytest.mark.parametrize("name", FUNCTIONAL)
def test_a_functional_run_reports_the_timing_of_a_timing_only_run(name):
    """Computing the values must not move the timeline: `nkic run` reports both."""
    program = nkirt.load(gzip.decompress((GOLDEN / f"{name}.neff.gz").read_bytes()))
    functional = nkirt.execute(program, {}, seed=3)
    timing_only = nkirt.execute(program, {}, timing_only=True)
    assert functional.outputs and not timing_only.outputs
    assert functional.records == timing_only.records
    assert [c[2] for c in functional.cores] == [c[2] for c in timing_only.cores]
    assert functional.profile == timing_only.profile


def test_every_stored_program_is_pinned():
    assert sorted(json.loads(EXPECTED.read_text())) == sorted(name for name, _, _ in _runs())


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/runtime/test_timing_golden.py --update")
    figures = {name: timing(path, ideal) for name, path, ideal in _runs()}
    EXPECTED.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")
    print(f"wrote {EXPECTED} ({len(figures)} runs)")
