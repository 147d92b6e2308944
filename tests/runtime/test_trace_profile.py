"""The Profile JSON, the Chrome trace, the text summary and the timeline picture of a run."""

from __future__ import annotations

import json
import sys

import jsonschema
import nkirt
import pytest
from neff_builder import Kernel
from nkirt import timeline
from nkirt.timeline import _occupancy, render_svg

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")


def pipeline_result():
    k = Kernel("trn2", name="scale")
    x = k.input("x", "bfloat16", [128, 512])
    y = k.output("y", "bfloat16", [128, 512])
    a = k.sbuf("a", "bfloat16", [128, 512])
    b = k.sbuf("b", "bfloat16", [128, 512], byte=2048)
    load = k.dma(k.ap(a), k.ap(x))
    act = k.inst(
        "activation", "scalar", {"dst": k.ap(b), "data": k.ap(a)}, {"op": "exp"}, waits=[(load, 0)]
    )
    k.dma(k.ap(y), k.ap(b), waits=[(act, 0)], queue="dma5")
    return nkirt.execute(nkirt.load(k.neff()), timing_only=True)


PROFILE_SCHEMA = {
    "type": "object",
    "required": [
        "target",
        "total_ns",
        "instructions",
        "bottleneck",
        "engines",
        "summary",
        "bounds",
        "critical_path",
    ],
    "properties": {
        "target": {"enum": ["trn1", "trn2", "trn3"]},
        "total_ns": {"type": "number", "minimum": 0},
        "instructions": {"type": "integer", "minimum": 0},
        "bottleneck": {"enum": [*ENGINES, "latency"]},
        "summary": {
            "type": "object",
            "required": [
                "total_time",
                "mfu_estimated_percent",
                "hfu_estimated_percent",
                "mbu_estimated_percent",
                "dma_active_time_percent",
                "tensor_engine_active_time_percent",
                "vector_engine_active_time_percent",
                "scalar_engine_active_time_percent",
                "gpsimd_engine_active_time_percent",
                "dma_transfer_average_bytes",
                "tensor_engine_instruction_count",
                "matmul_instruction_count",
            ],
        },
        "bounds": {
            "type": "object",
            "required": [
                "memory_bound",
                "memory_bound_ideal",
                "memory_bound_ideal_no_reloads",
                "compute_bound",
                "compute_bound_ideal_flops",
                "compute_bound_ideal_useful_flops",
                "perfect_pipeline",
                "bottleneck_engine",
                "bn_speedup",
                "gaps",
            ],
        },
        "engines": {
            "type": "object",
            "required": list(ENGINES),
            "additionalProperties": {
                "type": "object",
                "required": ["busy_ns", "instructions"],
                "properties": {
                    "busy_ns": {"type": "number", "minimum": 0},
                    "instructions": {"type": "integer", "minimum": 0},
                },
            },
        },
    },
}

TRACE_SCHEMA = {
    "type": "object",
    "required": ["traceEvents", "displayTimeUnit"],
    "properties": {
        "displayTimeUnit": {"const": "ns"},
        "traceEvents": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["ph", "pid", "tid", "name"],
                "properties": {"ph": {"enum": ["M", "X", "s", "f"]}, "ts": {"type": "number"}},
                "if": {"properties": {"ph": {"const": "X"}}},
                "then": {"required": ["ts", "dur", "cat"]},
            },
        },
    },
}


def test_profile_follows_the_design_contract():
    profile = pipeline_result().profile
    jsonschema.validate(profile, PROFILE_SCHEMA)
    assert profile["instructions"] == 3
    assert profile["engines"]["dma"]["instructions"] == 2
    assert profile["engines"]["scalar"]["instructions"] == 1
    # two 1 KiB-per-partition transfers around one activation: the fixed DMA costs, not any
    # engine's throughput, set the latency
    assert profile["bottleneck"] == "latency"
    assert profile["summary"]["total_time"] == pytest.approx(profile["total_ns"] * 1e-9)
    assert profile["summary"]["dma_transfer_count"] == 2
    assert profile["summary"]["dma_transfer_average_bytes"] == 128 * 512 * 2
    assert profile["dma_bytes"] == 2 * 128 * 512 * 2
    json.dumps(profile)  # serialisable as is


def test_profile_lists_the_costliest_instructions_with_source_lines():
    top = pipeline_result().profile["top_instructions"]
    assert top[0]["op"] == "dma_copy"
    assert {"op", "loc", "total_ns", "count"} <= set(top[0])
    assert top[0]["loc"].startswith("/src/kernels/test_kernel.py:")


def test_trace_has_a_track_per_queue_and_named_slices():
    trace = pipeline_result().trace()
    jsonschema.validate(trace, TRACE_SCHEMA)
    events = trace["traceEvents"]
    tracks = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert tracks == {"scalar", "dma0", "dma5"}
    names = [e["name"] for e in events if e["ph"] == "X" and e["cat"] != "semaphore"]
    assert names == [
        "dma_copy test_kernel.py:11",
        "activation test_kernel.py:12",
        "dma_copy test_kernel.py:13",
    ]


def test_semaphore_waits_show_as_slices_with_flow_arrows():
    events = pipeline_result().trace()["traceEvents"]
    waits = [e for e in events if e.get("cat") == "semaphore" and e["ph"] == "X"]
    assert [w["name"] for w in waits] == [
        "wait dma_copy test_kernel.py:11",
        "wait activation test_kernel.py:12",
    ]
    starts = [e for e in events if e["ph"] == "s"]
    finishes = [e for e in events if e["ph"] == "f"]
    assert len(starts) == len(finishes) == 2
    assert {e["id"] for e in starts} == {e["id"] for e in finishes}


def test_summary_reports_latency_engines_bottleneck_dma_and_top_lines():
    text = pipeline_result().summary()
    assert text.startswith("scale on trn2: latency ")
    for engine in ENGINES:
        assert f"  {engine} " in text
    assert "latency-bound" in text and "bottleneck:" not in text
    assert "critical path:" in text
    assert "GB/s achieved" in text
    assert "test_kernel.py:11" in text


def test_timeline_svg_has_a_row_per_queue(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "timeline.svg"
    render_svg(pipeline_result(), path)
    svg = path.read_text()
    assert svg.startswith("<?xml")
    for row in ("dma0", "scalar", "dma5"):
        assert row in svg


def test_timeline_without_matplotlib_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'nkic\[plot\]'"):
        render_svg(pipeline_result().trace(), tmp_path / "t.svg")


def test_slices_of_a_track_never_overlap_when_a_queue_runs_ahead():
    k = Kernel("trn2")
    x = k.input("x", "bfloat16", [128, 1024])
    k.output("unused", "float32", [1, 1])
    w = k.sbuf("w", "bfloat16", [128, 128])
    tiles = [k.sbuf(f"t{i}", "bfloat16", [128, 1024], byte=256 + 2048 * i) for i in range(3)]
    acc = k.psum("acc", "float32", [128, 512])
    for tile in tiles:  # one DMA queue with three transfers in flight
        k.dma(k.ap(tile), k.ap(x), queue="dma4")
    for i in range(3):  # LoadStationary overlaps the previous MultiplyMoving
        operands = {
            "dst": k.ap(acc),
            "stationary": k.ap(w),
            "moving": k.ap(tiles[0], [[1024, 128], [1, 512]]),
        }
        k.inst("nc_matmul", "tensor", operands, {"accumulate": i > 0}, waits=[(0, 0)])
    events = nkirt.execute(nkirt.load(k.neff()), timing_only=True).trace()["traceEvents"]
    by_track: dict[int, list] = {}
    for e in events:
        if e["ph"] == "X":
            by_track.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    assert len(by_track) == 2
    for spans in by_track.values():
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert start >= end - 1e-9


def test_busy_fraction_per_bin_splits_spans_across_bins():
    # bins of 10 µs: [0, 10) gets 2 + 5, [10, 20) gets 10 of the long span, [20, 30) gets 3
    occupancy = _occupancy([(3.0, 2.0), (5.0, 18.0)], 10.0, 3)
    assert list(occupancy) == pytest.approx([0.7, 1.0, 0.3])


def test_a_row_of_thousands_of_instructions_is_drawn_as_busy_fractions(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    drawn = []
    monkeypatch.setattr(timeline, "_draw_density", lambda ax, y, families, end: drawn.append(y))
    spans = [{"ph": "X", "tid": 1, "name": "nc_matmul k.py:3", "cat": "tensor", "ts": 2.0 * i,
              "dur": 0.5} for i in range(timeline.DENSE_ROW_BARS + 1)]  # fmt: skip
    few = [{"ph": "X", "tid": 2, "name": "dma_copy k.py:2", "cat": "dma", "ts": 0.0, "dur": 9.0}]
    names = [{"ph": "M", "tid": t, "name": "thread_name", "args": {"name": n}} for t, n in
             ((1, "tensor"), (2, "dma0"))]  # fmt: skip
    render_svg({"traceEvents": names + spans + few}, tmp_path / "t.svg")
    assert drawn == [0]  # the tensor row only; the DMA row keeps its bars


def test_a_dense_row_renders_with_its_family_in_the_legend(tmp_path):
    pytest.importorskip("matplotlib")
    spans = [{"ph": "X", "tid": 1, "name": "nc_matmul k.py:3", "cat": "tensor", "ts": 2.0 * i,
              "dur": 0.5} for i in range(timeline.DENSE_ROW_BARS + 1)]  # fmt: skip
    names = [{"ph": "M", "tid": 1, "name": "thread_name", "args": {"name": "tensor"}}]
    render_svg({"traceEvents": names + spans}, tmp_path / "t.svg")
    svg = (tmp_path / "t.svg").read_text()
    assert "matmul" in svg and "tensor" in svg


def _trace(spans, kernel="k (trn2)"):
    """A trace dict with one slice per (tid, name, cat, ts µs, dur µs)."""
    names = {1: "tensor", 2: "dma0"}
    events = [{"ph": "M", "tid": 0, "name": "process_name", "args": {"name": kernel}}]
    events += [{"ph": "M", "tid": t, "name": "thread_name", "args": {"name": n}} for t, n in
               names.items()]  # fmt: skip
    events += [{"ph": "X", "tid": t, "name": n, "cat": c, "ts": ts, "dur": d}
               for t, n, c, ts, d in spans]  # fmt: skip
    return {"traceEvents": events}


def test_timeline_title_has_latency_and_bottleneck_and_the_axis_unit_scales():
    pytest.importorskip("matplotlib")
    fig = timeline.timeline_figure(pipeline_result())
    profile = pipeline_result().profile
    ax = fig.axes[0]
    assert profile["bottleneck"] == "latency"  # no engine busy more than half the time
    assert ax.get_title() == (
        f"scale (trn2): latency {profile['total_ns'] / 1000:,.3f} µs, "
        "latency-bound (no engine is the bottleneck)"
    )
    assert ax.get_xlabel() == "time (µs)"
    long = _trace([(2, "dma_copy k.py:2", "dma", 0.0, 4000.0), (1, "nc_matmul k.py:3", "tensor",
                    10.0, 5.0)])  # fmt: skip
    ax = timeline.timeline_figure(long).axes[0]
    assert ax.get_xlabel() == "time (ms)"
    assert ax.get_title() == "k (trn2): latency 4.000 ms, bottleneck dma"
    assert ax.get_xlim()[1] == pytest.approx(4.0 * 1.01)
    short = _trace([(1, "nc_matmul k.py:3", "tensor", 0.0, 0.9)])
    assert timeline.timeline_figure(short).axes[0].get_xlabel() == "time (ns)"


def test_timeline_legend_is_outside_the_rows_and_a_single_short_transfer_is_visible():
    pytest.importorskip("matplotlib")
    trace = _trace([(1, "nc_matmul k.py:3", "tensor", 0.0, 10_000.0),
                    (2, "dma_copy k.py:2", "dma", 5_000.0, 0.001)])  # fmt: skip
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = timeline.timeline_figure(trace)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    ax = fig.axes[0]
    (legend,) = fig.legends
    renderer = canvas.get_renderer()
    assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))
    assert [t.get_text() for t in legend.get_texts()] == ["dma", "matmul"]
    dma_row = [c for c in ax.collections if c.get_facecolor()[0][2] > 0.6]  # the blue DMA bar
    (bar,) = dma_row[0].get_paths()
    xs = ax.transData.transform(bar.vertices)[:, 0]
    width_px = xs.max() - xs.min()
    assert width_px >= 0.8  # ~ one pixel wide, not a 0.0001-pixel sliver


def test_timeline_picture_sets_no_global_backend(tmp_path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    monkeypatch.setattr(matplotlib, "use", lambda *a, **k: pytest.fail("matplotlib.use called"))
    render_svg(pipeline_result(), tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes().startswith(b"\x89PNG")


def test_timeline_rejects_an_unknown_picture_format(tmp_path):
    with pytest.raises(ValueError, match=r"cannot draw a timeline as \.txt: use one of \.svg"):
        render_svg(pipeline_result(), tmp_path / "t.txt")
