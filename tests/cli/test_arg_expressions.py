"""`--arg` expressions on the command line: a configuration object, an Enum member and a list
of tensors; the tensors are the run's inputs `NAME_0`, `NAME_1`, ... (`--in`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from click.testing import CliRunner

from nkic.cli import cli

KERNEL = str(Path(__file__).resolve().parents[1] / "frontend" / "kernels" / "structured_args.py")


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_compile_and_run_with_a_list_and_an_object(tmp_path):
    neff = tmp_path / "k.neff"
    res = invoke(
        "compile", KERNEL, "-k", "add_all", "-o", str(neff),
        "--arg", "xs=[float32[128,32], float32[128,32]]",
        "--arg", "cfg=Config(mode=Mode.DOUBLED_SUM, bias=float32[128,32])",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    rng = np.random.default_rng(3)
    arrays = {n: rng.standard_normal((128, 32)).astype(np.float32) for n in ("a", "b", "c")}
    for n, a in arrays.items():
        np.save(tmp_path / f"{n}.npy", a)
    out = tmp_path / "out"
    res = invoke(
        "run", str(neff), "--out-dir", str(out),
        "--in", f"xs_0={tmp_path / 'a.npy'}", "--in", f"xs_1={tmp_path / 'b.npy'}",
        "--in", f"cfg_bias={tmp_path / 'c.npy'}",
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    want = (arrays["a"] + arrays["b"]) * 2 + arrays["c"]
    np.testing.assert_allclose(np.load(out / "out.npy"), want, rtol=1e-6, atol=1e-6)
    res = invoke("run", str(neff), "--timing-only", "--in", f"xs={tmp_path / 'a.npy'}")
    assert res.exit_code == 2 and "inputs: cfg_bias, xs_0, xs_1" in res.output


def test_a_malformed_expression_is_a_one_line_usage_error(tmp_path):
    for bad, why in (("Config(", "expected a tensor spec"), ("[x for x in xs]", "ListComp")):
        res = invoke(
            "compile",
            KERNEL,
            "-k",
            "add_all",
            "--arg",
            f"cfg={bad}",
            "-o",
            str(tmp_path / "k.neff"),
        )
        assert res.exit_code == 2
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: --arg cfg:") and why in lines[0]


def test_an_unknown_name_is_a_diagnostic_at_the_parameter(tmp_path):
    res = invoke(
        "check", KERNEL, "-k", "add_all",
        "--arg", "xs=[float32[128,32]]", "--arg", "cfg=Config(mode=Mode.TRIPLED)",
    )  # fmt: skip
    assert res.exit_code == 1
    assert "argument 'cfg'" in res.output and "structured_args.py:24" in res.output
