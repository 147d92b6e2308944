"""The worked example of docs/sweep.md: its spec and reference are written next to a copy of
examples/, its command is run, and its sample output and prose claims are checked."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

from click.testing import CliRunner

from nkic import sweep
from nkic.cli import cli

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "sweep.md").read_text()


def _block(lang: str, after: str) -> str:
    """The first ```lang block after the text `after`."""
    rest = DOC[DOC.index(after) :]
    m = re.search(rf"^```{lang}\n(.*?)^```$", rest, re.S | re.M)
    assert m, f"no {lang} block after {after!r}"
    return m.group(1)


def _numbers_out(text: str) -> str:
    return re.sub(r"\d+(\.\d+)?", "N", text)


def test_worked_example(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    (tmp_path / "matmul_sweep.toml").write_text(_block("toml", "## Worked example"))
    (tmp_path / "matmul_ref.py").write_text(_block("python", "## Worked example"))
    command = shlex.split(_block("sh", "## Worked example").strip())
    assert command[:2] == ["nkic", "sweep"]
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, command[1:], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    shown = _block("text", "## Worked example").strip().splitlines()
    printed = [_numbers_out(line) for line in res.output.splitlines()]
    for line in shown:
        assert _numbers_out(line) in printed, line
    # the exact counts the prose quotes
    assert shown[0] in res.output
    rows = [json.loads(line) for line in (tmp_path / "matmul_sweep.jsonl").read_text().split("\n")
            if line]  # fmt: skip
    assert (tmp_path / "matmul_sweep.csv").read_text().count("\n") == len(rows) + 1 == 30
    failed = [r for r in rows if r["status"] != "ok"]
    assert {r["params"]["TILES_M"] for r in failed} == {16}
    assert all(r["diagnostics"][0]["code"] == "err_assert_failed" for r in failed)
    functional = [r for r in rows if r["run"] == "functional"]
    assert len(functional) == 6 and all(r["status"] == "ok" for r in functional)
    blocked = {
        r["params"]["TILES_M"]: r["summary"]["hbm_read_bytes"]
        for r in rows
        if r["kernel"] == "matmul_blocked" and r["run"] == "timing" and r["status"] == "ok"
    }
    # rhs is re-read once per M block: fewer bytes with each doubling of TILES_M
    assert blocked[1] > blocked[2] > blocked[4] > blocked[8]
    assert round(blocked[1] / 1e6) == 36 and round(blocked[8] / 1e5) == 63
    fastest = {(r["kernel"], r["run"]): r["latency_ns"] for r in sweep.best(rows)}
    one = [
        r["latency_ns"] for r in rows if r["params"].get("TILES_M") == 1 and r["run"] == "timing"
    ]
    assert fastest[("matmul_blocked", "timing")] < min(one) / 2
    assert fastest[("matmul_blocked", "timing")] < fastest[("matmul_blocked_mnk", "timing")]
