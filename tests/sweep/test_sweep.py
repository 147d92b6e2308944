"""`nkic sweep`: points, statuses, recorded diagnostics, resume, functional comparison against
a numpy reference, crashes, CSV and the best-configuration summary."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nkic import sweep
from nkic.cli import cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "matmul_blocked.py"

# M = 512 is 4 column tiles of 128 and N = 1024 two of 512: TILES_M = 3 does not divide M
GRID = f"""
run = "timing"
[[kernel]]
file = "{EXAMPLE}"
kernel = "matmul_blocked"
shapes = [{{ lhsT = "float32[128,512]", rhs = "float32[128,1024]" }}]
params = {{ TILES_M = [1, 2, 3, 4], TILES_N = [1, 2] }}
"""

FUNCTIONAL = f"""
[[kernel]]
file = "{EXAMPLE}"
kernel = "matmul_blocked"
run = "functional"
reference = "ref:{{fn}}"
shapes = [{{{{ lhsT = "float32[128,256]", rhs = "float32[128,512]" }}}}]
params = {{{{ TILES_M = [1, 2], TILES_N = [1] }}}}
"""

REF = """
import os

import numpy as np

def matmul(lhsT, rhs, TILES_M, TILES_N):
    return lhsT.astype(np.float64).T @ rhs.astype(np.float64)

def off_by_one(lhsT, rhs, **params):
    return matmul(lhsT, rhs, **params) + 1.0

def raises(lhsT, rhs, **params):
    raise ValueError("no reference for this shape")

def dies(lhsT, rhs, **params):
    os._exit(3)
"""


def _sweep(tmp_path: Path, spec: str, *extra: str):
    (tmp_path / "spec.toml").write_text(spec)
    (tmp_path / "ref.py").write_text(REF)
    out = tmp_path / "results.jsonl"
    res = CliRunner().invoke(
        cli, ["sweep", str(tmp_path / "spec.toml"), "-o", str(out), *extra], catch_exceptions=False
    )
    rows = []
    for line in out.read_text().splitlines() if out.exists() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:  # the torn line of an interrupted sweep
            pass
    return res, rows


def test_grid_statuses_failures_and_best(tmp_path):
    res, rows = _sweep(tmp_path, GRID, "-j", "2")
    assert res.exit_code == 0, res.output
    assert len(rows) == 8
    by = {(r["params"]["TILES_M"], r["params"]["TILES_N"]): r for r in rows}
    assert set(by) == {(m, n) for m in (1, 2, 3, 4) for n in (1, 2)}
    for (m, _), r in by.items():
        if m == 3:
            assert r["status"] == "failed" and r["latency_ns"] is None
            assert r["diagnostics"][0]["code"] == "err_assert_failed"
            assert "M % BLOCK_M" in r["diagnostics"][0]["message"]
        else:
            assert r["status"] == "ok" and r["diagnostics"] == []
            assert r["latency_ns"] == pytest.approx(r["summary"]["total_time"] * 1e9)
            assert (
                r["summary"]["matmul_instruction_count"] == 4 * 2
            )  # M tiles x N tiles x one K tile
            assert r["compile_s"] > 0 and r["simulate_s"] > 0
    # bigger blocks load each byte fewer times: TILES_M = 4 beats TILES_M = 1
    assert by[(4, 1)]["summary"]["hbm_read_bytes"] < by[(1, 1)]["summary"]["hbm_read_bytes"]
    ok = [r for r in rows if r["status"] == "ok"]
    fastest = min(ok, key=lambda r: r["latency_ns"])
    assert sweep.best(rows) == [fastest]
    m, n = fastest["params"]["TILES_M"], fastest["params"]["TILES_N"]
    assert f"TILES_M={m} TILES_N={n} {fastest['latency_ns']:.0f} ns" in res.output
    assert "8 points: 2 failed, 6 ok" in res.output


@pytest.mark.parametrize("run", ["check", "compile"])
def test_check_and_compile_runs(tmp_path, run):
    res, rows = _sweep(tmp_path, GRID.replace('run = "timing"', f'run = "{run}"'))
    assert res.exit_code == 0, res.output
    assert len(rows) == 8 and all(r["run"] == run for r in rows)
    for r in rows:
        assert r["latency_ns"] is None and r["simulate_s"] is None and r["compile_s"] > 0
        if r["params"]["TILES_M"] == 3:
            assert r["status"] == "failed"
            assert [d["code"] for d in r["diagnostics"]] == ["err_assert_failed"]
        else:
            assert r["status"] == "ok" and r["diagnostics"] == []


def test_resume_skips_recorded_points(tmp_path):
    _, rows = _sweep(tmp_path, GRID)
    out = tmp_path / "results.jsonl"
    lines = out.read_text().splitlines()
    # keep three rows and a torn last line, as an interrupted sweep leaves it
    out.write_text("\n".join(lines[:3]) + "\n" + lines[3][:20])
    res, again = _sweep(tmp_path, GRID)
    assert "8 points, 3 already in" in res.output
    keys = [r["key"] for r in again]
    assert len(keys) == len(set(keys)) == 8
    assert sorted(keys) == sorted(r["key"] for r in rows)
    res, _ = _sweep(tmp_path, GRID)
    assert "8 points, 8 already in" in res.output


def test_point_keys_are_stable_and_distinct(tmp_path):
    (tmp_path / "spec.toml").write_text(GRID)
    a = sweep.load_spec(tmp_path / "spec.toml")
    b = sweep.load_spec(tmp_path / "spec.toml")
    assert [p.key for p in a] == [p.key for p in b]
    assert len({p.key for p in a}) == len(a) == 8


def test_functional_against_numpy_reference(tmp_path):
    _, rows = _sweep(tmp_path, FUNCTIONAL.format(fn="matmul"))
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert all(r["max_abs_err"] < 1e-3 for r in rows)
    _, rows = _sweep(tmp_path, FUNCTIONAL.format(fn="off_by_one"))
    wrong = [r for r in rows if r["status"] == "mismatch"]
    assert len(wrong) == 2 and all(r["max_abs_err"] == pytest.approx(1.0, abs=1e-3) for r in wrong)


def test_reference_exception_is_recorded(tmp_path):
    _, rows = _sweep(tmp_path, FUNCTIONAL.format(fn="raises"))
    assert [r["status"] for r in rows] == ["error", "error"]
    assert rows[0]["diagnostics"] == [
        {"code": "ValueError", "message": "no reference for this shape"}
    ]


def test_crashed_worker_is_retried_then_recorded(tmp_path):
    res, rows = _sweep(tmp_path, FUNCTIONAL.format(fn="dies") + GRID.split("\n", 2)[2], "-j", "2")
    assert res.exit_code == 0, res.output
    crashed = [r for r in rows if r["status"] == "crashed"]
    assert len(crashed) == 2 and all(r["run"] == "functional" for r in crashed)
    assert crashed[0]["diagnostics"][0]["code"] == "worker_crash"
    # the points that shared the pool with the crashes still finish
    assert sum(r["status"] == "ok" for r in rows) == 6


def test_csv(tmp_path):
    res, rows = _sweep(tmp_path, GRID, "--csv", str(tmp_path / "r.csv"))
    with (tmp_path / "r.csv").open() as f:
        table = list(csv.DictReader(f))
    assert [t["key"] for t in table] == [r["key"] for r in rows]
    for t, r in zip(table, rows):
        assert t["param:TILES_M"] == str(r["params"]["TILES_M"])
        assert t["shape:lhsT"] == "float32[128,512]"
        if r["status"] == "ok":
            assert float(t["latency_ns"]) == pytest.approx(r["latency_ns"])
            assert float(t["summary:dma_transfer_count"]) == r["summary"]["dma_transfer_count"]
        else:
            assert t["diagnostics"].startswith("err_assert_failed: assertion failed")


@pytest.mark.parametrize(
    "spec, message",
    [
        ("[[kernel]]\nkernel = 'k'\n", "`file` must be a string"),
        ("x = [", "invalid TOML"),
        ("run = 'timing'\n", "no [[kernel]] tables"),
        (GRID.replace('run = "timing"', 'run = "fast"'), "run must be one of"),
        (GRID.replace("TILES_N = [1, 2]", "TILES_N = 2"), "`params.TILES_N` must be a non-empty"),
        (GRID.replace("float32[128,512]", "float33[128,512]"), "unknown dtype 'float33'"),
        (GRID + "targets = ['trn9']\n", "unknown target 'trn9'"),
        (GRID.replace('run = "timing"', 'run = "functional"'), "reference = 'module:function'"),
        (FUNCTIONAL.format(fn="m").replace("ref:", "nowhere:"), "no reference module nowhere.py"),
    ],
)
def test_bad_spec_is_one_line_usage_error(tmp_path, spec, message):
    res, rows = _sweep(tmp_path, spec)
    assert res.exit_code == 2 and rows == []
    assert message in res.output and res.output.count("\n") == 1


def test_bad_command_line(tmp_path):
    res, rows = _sweep(tmp_path, GRID, "-j", "0")
    assert res.exit_code == 2 and rows == []
    (tmp_path / "spec.toml").write_text(GRID)
    res = CliRunner().invoke(
        cli, ["sweep", str(tmp_path / "spec.toml"), "-o", str(tmp_path / "no" / "r.jsonl")]
    )
    assert res.exit_code == 2 and res.output.startswith("error: cannot write")
    res = CliRunner().invoke(cli, ["sweep", str(tmp_path / "missing.toml")])
    assert res.exit_code == 2 and "cannot read" in res.output


def test_ray_missing_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    res, rows = _sweep(tmp_path, GRID, "--ray")
    assert res.exit_code == 2 and rows == []
    assert "pip install 'nkic[ray]'" in res.output


@pytest.mark.slow
def test_ray_local(tmp_path):
    ray = pytest.importorskip("ray")
    # the kernel and the reference are named relative to the spec's folder, shipped to Ray
    (tmp_path / "kernels").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "kernels" / "mm.py")
    spec = GRID + FUNCTIONAL.format(fn="off_by_one")
    spec = spec.replace(f'file = "{EXAMPLE}"', 'file = "kernels/mm.py"')
    assert not ray.is_initialized()
    try:  # the sweep starts the local instance (this machine has 2 CPUs) and ships the folder
        res, rows = _sweep(tmp_path, spec, "--ray")
    finally:
        ray.shutdown()
    assert res.exit_code == 0, res.output
    local_tmp = tmp_path / "local"
    shutil.copytree(tmp_path / "kernels", local_tmp / "kernels")
    _, local = _sweep(local_tmp, spec, "-j", "2")
    assert len(rows) == 10
    assert sorted((r["key"], r["status"], r["latency_ns"]) for r in rows) == sorted(
        (r["key"], r["status"], r["latency_ns"]) for r in local
    )
    assert sum(r["status"] == "mismatch" for r in rows) == 2


def test_string_parameters_name_dtypes(tmp_path):
    mnk = EXAMPLE.with_name("matmul_blocked_mnk.py")
    spec = f"""
[[kernel]]
file = "{mnk}"
kernel = "matmul_blocked_mnk"
shapes = [{{ lhsT = "bfloat16[512,512]", rhs = "bfloat16[512,1024]" }}]
params = {{ TILES_M = [2], TILES_N = [1], TILES_K = [2], SUMS_DTYPE = ["float32", "bfloat16"] }}
"""
    _, rows = _sweep(tmp_path, spec)
    by = {r["params"]["SUMS_DTYPE"]: r for r in rows}
    assert by["float32"]["status"] == by["bfloat16"]["status"] == "ok"
    # bf16 partial sums make the Vector engine's adds into the SBUF accumulator cheaper
    vector = {k: r["summary"]["vector_engine_active_time"] for k, r in by.items()}
    assert vector["bfloat16"] < vector["float32"]


def test_plot_draws_one_bar_per_configuration_that_ran(tmp_path):
    pytest.importorskip("matplotlib")
    picture = tmp_path / "sweep.svg"
    res, rows = _sweep(tmp_path, GRID, "--plot", str(picture))
    assert res.exit_code == 0, res.output
    ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: r["latency_ns"])
    fig = sweep.plot_figure(rows)
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == [
        f"TILES_M={r['params']['TILES_M']} TILES_N={r['params']['TILES_N']}" for r in ok
    ]  # fastest first; the failed TILES_M=3 points are absent
    widths = [bar.get_width() for bar in ax.patches]
    assert widths == pytest.approx([r["latency_ns"] / 1e3 for r in ok])
    assert "best " + labels[0] in ax.get_title()
    assert picture.read_text().lstrip().startswith(("<?xml", "<svg"))


def test_plot_needs_a_picture_extension(tmp_path):
    res, _ = _sweep(tmp_path, GRID, "--plot", str(tmp_path / "sweep.txt"))
    assert res.exit_code == 2 and "use a .svg, .png or .pdf file" in res.output
