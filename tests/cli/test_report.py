"""The resource report of `nkic check --report` / `nkic compile --report`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from nkic.cli import cli

ROOT = Path(__file__).resolve().parents[2]
TILED = str(ROOT / "examples" / "matmul_tiled.py")
#: The same kernel with `nl.affine_range` loops, which stay loops: static and executed counts differ.
KEPT = str(ROOT / "tests" / "cli" / "kernels" / "kept_loops.py")
LNC = str(ROOT / "examples" / "matmul_lnc.py")
TILED_ARGS = ["--arg", "lhsT=bfloat16[512,256]", "--arg", "rhs=bfloat16[512,1024]"]


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_compile_report_counts_what_the_loops_execute(tmp_path):
    res = invoke("compile", KEPT, "-k", "matmul_tiled", *TILED_ARGS, "-o",
                 str(tmp_path / "m.neff"), "--report", "--format", "json")  # fmt: skip
    assert res.exit_code == 0
    report = json.loads(res.stdout)
    assert (report["kernel"], report["target"], report["lnc"]) == ("matmul_tiled", "trn2", 1)
    (core,) = report["cores"]
    # M=256, N=1024, K=512 in tiles of 128 x 512 x 128: m 2, n 2, k 4 iterations
    assert core["instructions"]["tensor"] == {"static": 1, "executed": 16}
    assert core["instructions"]["dma"] == {"static": 3, "executed": 16 + 16 + 4}
    dma = core["dma"]["tensors"]
    assert dma["lhsT"]["read"]["bytes"] == 16 * 128 * 128 * 2
    assert dma["rhs"]["read"]["bytes"] == 16 * 128 * 512 * 2
    assert dma["result"]["written"] == {
        "transfers": 4,
        "bytes": 4 * 128 * 512 * 2,
        "ranges": [[0, 256 * 1024 * 2 - 1]],
        "elements": [[[0, 256], [0, 1024]]],
    }
    assert dma["lhsT"]["written"]["transfers"] == 0
    sbuf, psum = core["sbuf"], core["psum"]
    assert 0 < sbuf["peak_bytes_per_partition"] <= sbuf["limit_bytes_per_partition"] == 212_984
    names = {t["name"] for t in sbuf["tensors"]}
    assert names == {"lhsT_tile", "rhs_tile", "out_tile"}
    assert [t["name"] for t in psum["tensors"]] == ["acc"]
    assert psum["limit_banks"] == 8 and 1 <= psum["banks"] <= 2
    assert core["semaphores"]["waits"] > 0 and core["semaphores"]["limit"] is None


def test_check_report_gives_each_cores_share_of_the_shared_tensors():
    res = invoke("check", LNC, "--arg", "lhsT=float32[256,256]", "--arg",
                 "rhs=float32[256,512]", "--report", "--format", "json")  # fmt: skip
    assert res.exit_code == 0
    out = json.loads(res.stdout)
    assert out["diagnostics"] == []
    single, double = out["reports"]
    assert (single["lnc"], double["lnc"]) == (1, 2)
    rows = [c["dma"]["tensors"]["result"]["written"]["elements"] for c in double["cores"]]
    assert rows == [[[[0, 128], [0, 512]]], [[[128, 256], [0, 512]]]]
    halves = [c["dma"]["tensors"]["result"]["written"]["ranges"] for c in double["cores"]]
    assert halves == [[[0, 128 * 512 * 4 - 1]], [[128 * 512 * 4, 256 * 512 * 4 - 1]]]
    text = invoke("check", LNC, "--arg", "lhsT=float32[256,256]", "--arg",
                  "rhs=float32[256,512]", "--report", "--lnc", "2").stdout  # fmt: skip
    assert "resource report: matmul_lnc on trn2, LNC=2" in text and "core 1:" in text
    assert "SBUF" in text and "of 212,984" in text and "(elements [128:256, 0:512])" in text


def test_report_is_text_or_json_only():
    res = invoke("check", TILED, *TILED_ARGS, "--report", "--format", "sarif")
    assert res.exit_code == 2 and "--report prints text or json" in res.output
