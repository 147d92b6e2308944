"""The command line end to end: compile, run, and a clear one-line error for every bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from nkic.cli import cli

#: Examples spelt with `nl.affine_range`: loops that nkic keeps (the examples' `range` unrolls).
KEPT = str(Path(__file__).parent / "kernels" / "kept_loops.py")


def nkic(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "nkic", *args], capture_output=True, text=True, timeout=120
    )


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def assert_one_line_error(res, *fragments: str):
    err = res.stderr if hasattr(res, "stderr") else res.output
    assert res.returncode if hasattr(res, "returncode") else res.exit_code
    assert "Traceback" not in err
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert lines and lines[-1].startswith("error"), err
    for f in fragments:
        assert f in err, err


@pytest.fixture
def add_neff(tmp_path, examples):
    out = tmp_path / "add.neff"
    res = invoke(
        "compile",
        str(examples / "tensor_add.py"),
        "--arg",
        "a=bfloat16[128,64]",
        "--arg",
        "b=bfloat16[128,64]",
        "-o",
        str(out),
    )
    assert res.exit_code == 0, res.output
    return out


def test_compile_and_run_with_inputs(tmp_path, add_neff):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 64)).astype(np.float32)
    b = rng.standard_normal((128, 64)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    prof = tmp_path / "p.json"
    res = invoke(
        "run",
        str(add_neff),
        "--in",
        f"a={tmp_path / 'a.npy'}",
        "--in",
        f"b={tmp_path / 'b.npy'}",
        "--out-dir",
        str(tmp_path / "out"),
        "--profile",
        str(prof),
    )
    assert res.exit_code == 0, res.output
    got = np.load(tmp_path / "out" / "c.npy")
    # float32 inputs are rounded to the kernel's bfloat16 (nearest even) before the add
    a16, b16 = (x.astype(ml_dtypes.bfloat16).astype(np.float32) for x in (a, b))
    want = (a16 + b16).astype(ml_dtypes.bfloat16).astype(np.float32)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    p = json.loads(prof.read_text())
    assert p["target"] == "trn2" and p["total_ns"] > 0
    assert set(p["engines"]) >= {"tensor", "vector", "scalar", "gpsimd", "dma"}
    assert "bottleneck" in res.output and "µs" in res.output


def test_emit_ir_and_asm(tmp_path, examples):
    for emit, marker in (("ir", "kernel @tiled_add"), ("asm", "dma")):
        res = invoke(
            "compile",
            str(examples / "tiled_add.py"),
            "--arg",
            "a=float32[512,128]",
            "--arg",
            "b=float32[512,128]",
            "-o",
            str(tmp_path / "t.neff"),
            "--emit",
            emit,
        )
        assert res.exit_code == 0, res.output
        assert marker in res.output
    shapes = ["--arg", "a=float32[512,128]", "--arg", "b=float32[512,128]"]
    out = ["-o", str(tmp_path / "t.neff"), "--emit", "ir"]
    ir = invoke("compile", str(examples / "tiled_add.py"), *shapes, *out).output
    assert "for $" not in ir and ir.count("tensor_tensor") == 4, "a range loop is unrolled"
    ir = invoke("compile", KEPT, "-k", "tiled_add", *shapes, *out).output
    assert ir.count("for $") == 1 and ir.count("tensor_tensor") == 1, "an affine loop stays one"


def test_missing_inputs_get_seeded_random_data(tmp_path, add_neff):
    r1 = invoke("run", str(add_neff), "--seed", "3", "--out-dir", str(tmp_path / "r1"))
    r2 = invoke("run", str(add_neff), "--seed", "3", "--out-dir", str(tmp_path / "r2"))
    assert r1.exit_code == r2.exit_code == 0
    np.testing.assert_array_equal(np.load(tmp_path / "r1/c.npy"), np.load(tmp_path / "r2/c.npy"))


def test_kernel_file_that_does_not_parse(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import nki\n@nki.jit\ndef k(a):\n    return a +\n")
    res = nkic("compile", str(bad), "--arg", "a=float32[128,4]")
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    assert "bad.py:4" in res.stderr


def test_unknown_kernel_name(examples):
    res = nkic("compile", str(examples / "tensor_add.py"), "-k", "nope", "--arg", "a=float32[1,1]")
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "nope" in res.stderr and "tensor_add" in res.stderr


def test_arg_not_in_signature(examples):
    res = nkic(
        "compile",
        str(examples / "tensor_add.py"),
        "--arg",
        "a=float32[128,4]",
        "--arg",
        "b=float32[128,4]",
        "--arg",
        "z=float32[128,4]",
    )
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert "z" in res.stderr


def test_malformed_arg_spec(examples):
    res = nkic("compile", str(examples / "tensor_add.py"), "--arg", "a=float32[128,")
    assert_one_line_error(res, "--arg a")
    assert res.returncode == 2


def test_missing_kernel_file(tmp_path):
    res = nkic("compile", str(tmp_path / "missing.py"))
    assert_one_line_error(res, "no such kernel file")


def test_input_of_wrong_shape(tmp_path, add_neff):
    np.save(tmp_path / "a.npy", np.zeros((3, 3), np.float32))
    res = nkic("run", str(add_neff), "--in", f"a={tmp_path / 'a.npy'}", "--out-dir", str(tmp_path))
    assert_one_line_error(res, "a", "[128, 64]", "[3, 3]")


def test_input_name_not_in_kernel(tmp_path, add_neff):
    np.save(tmp_path / "q.npy", np.zeros((3, 3), np.float32))
    res = nkic("run", str(add_neff), "--in", f"q={tmp_path / 'q.npy'}", "--out-dir", str(tmp_path))
    assert_one_line_error(res, "no input 'q'")


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "garbage"])
def test_corrupt_neff_is_rejected(tmp_path, add_neff, damage):
    data = bytearray(add_neff.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data[len(data) - 10] ^= 0xFF
    elif damage == "empty":
        data = bytearray()
    else:
        data = bytearray(b"not a neff at all" * 10)
    bad = tmp_path / "bad.neff"
    bad.write_bytes(bytes(data))
    res = nkic("run", str(bad), "--out-dir", str(tmp_path))
    assert_one_line_error(res, "bad.neff")
    assert res.returncode == 2


def test_run_warns_about_inputs_outside_a_functions_valid_range(tmp_path):
    kernel = Path(__file__).parent / "kernels" / "log_tiles.py"
    neff = tmp_path / "log.neff"
    assert (
        invoke("compile", str(kernel), "--arg", "x=float32[128,256]", "-o", str(neff)).exit_code
        == 0
    )
    x = np.ones((128, 256), np.float32)
    x[5, 200] = -2.0  # second tile only
    np.save(tmp_path / "x.npy", x)
    res = invoke(
        "run",
        str(neff),
        "--in",
        f"x={tmp_path / 'x.npy'}",
        "--profile",
        str(tmp_path / "p.json"),
        "--out-dir",
        str(tmp_path / "out"),
    )
    assert res.exit_code == 0
    first, line = [ln for ln in res.output.splitlines() if "warning:" in ln]
    # log(-2) is NaN: the run also names the first instruction that made Inf/NaN
    assert (
        "non-finite values from finite inputs: activation at log_tiles.py:15 [i=1] wrote Inf/NaN"
        in first
    )
    assert (
        "activation at log_tiles.py:15 [i=1]: log: 1 of 16384 inputs outside the valid range"
        in line
    )
    non_finite, w = json.loads((tmp_path / "p.json").read_text())["warnings"]
    assert non_finite["kind"] == "non-finite" and non_finite["loc"] == "log_tiles.py:15"
    assert (w["op"], w["loc"], w["count"]) == ("activation", "log_tiles.py:15", 1)


def test_bfloat16_npy_saved_by_ml_dtypes_loads_and_a_float32_one_is_converted_with_a_note(
    tmp_path, add_neff
):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((128, 64)).astype(np.float32)
    np.save(tmp_path / "a.npy", a)  # stored as raw 2-byte values ('|V2')
    np.save(tmp_path / "b.npy", b)
    res = nkic("run", str(add_neff), "--in", f"a={tmp_path / 'a.npy'}", "--in",
               f"b={tmp_path / 'b.npy'}", "--out-dir", str(tmp_path / "o"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    notes = [ln for ln in res.stderr.splitlines() if ln.startswith("note:")]
    assert notes == [
        "note: --in b: float32 array converted to the kernel's bfloat16 (round to nearest even)"
    ]
    want = (a.astype(np.float32) + b.astype(ml_dtypes.bfloat16).astype(np.float32)).astype(
        ml_dtypes.bfloat16
    )
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "c.npy"), want.astype(np.float32))


def test_raw_npy_values_of_the_wrong_width_are_a_usage_error(tmp_path, add_neff):
    np.save(tmp_path / "a.npy", np.zeros((128, 64), ml_dtypes.float8_e4m3fn))  # '|V1'
    res = nkic("run", str(add_neff), "--in", f"a={tmp_path / 'a.npy'}")
    assert res.returncode == 2
    assert_one_line_error(res, "raw 1-byte values", "bfloat16 (2 bytes each)")


@pytest.mark.parametrize(
    "option, name, message",
    [
        ("profile -o", "t.txt", "cannot draw a timeline as .txt"),
        ("profile -o", "missing/t.svg", "no such directory"),
        ("run --trace", "missing/t.json", "no such directory"),
        ("compile -o", "missing/k.neff", "no such directory"),
    ],
)
def test_bad_output_paths_are_usage_errors(tmp_path, add_neff, examples, option, name, message):
    command, flag = option.split()
    out = str(tmp_path / name)
    if command == "compile":
        args = [str(examples / "tensor_add.py"), "--arg", "a=bfloat16[128,64]", "--arg",
                "b=bfloat16[128,64]"]  # fmt: skip
    else:
        args = [str(add_neff)]
    res = nkic(command, *args, flag, out)
    assert res.returncode == 2 and "internal error" not in res.stderr
    assert_one_line_error(res, message)


def test_run_speaks_explorer_and_names_loops_as_the_source_does(tmp_path):
    neff = tmp_path / "rows.neff"
    args = ["--arg", "lhsT=bfloat16[512,1024]", "--arg", "rhs=bfloat16[512,1024]"]
    compiled = invoke("compile", KEPT, "-k", "matmul_row_loads", *args, "-o", str(neff))
    assert compiled.exit_code == 0
    loops = []

    def collect(nodes):
        for node in nodes:
            if node["kind"] == "loop":
                loops.append(node["name"])
                collect(node["body"])

    import nkirt

    collect(nkirt.load(neff.read_bytes()).body)
    assert {"k", "bm", "bn"} <= set(loops)
    runs = {}
    for flag in ([], ["--ideal-waits"]):
        profile = tmp_path / f"p{len(flag)}.json"
        res = invoke("run", str(neff), "--timing-only", "--profile", str(profile), *flag)
        assert res.exit_code == 0, res.output
        assert "mfu_estimated_percent" in res.output and "performance bounds" in res.output
        assert "critical path:" in res.output and "k=" in res.output
        runs[bool(flag)] = json.loads(profile.read_text())
    path = runs[False]["critical_path"]["by_instruction"]
    assert any("k" in row["first_iteration"] for row in path)
    # ideal waits are at least as fine as the compiler's: never slower
    assert runs[True]["total_ns"] <= runs[False]["total_ns"] + 1e-6


def test_compile_unroll_loops_gives_the_same_instances_without_loops(tmp_path):
    import nkirt

    args = ["--arg", "lhsT=bfloat16[256,1024]", "--arg", "rhs=bfloat16[256,1024]"]
    programs = {}
    for flag in ([], ["--unroll-loops"]):
        neff = tmp_path / f"m{len(flag)}.neff"
        compiled = invoke("compile", KEPT, "-k", "matmul_row_loads", *args, "-o", str(neff), *flag)
        assert compiled.exit_code == 0
        programs[bool(flag)] = nkirt.load(neff.read_bytes())
    assert any(node["kind"] == "loop" for node in programs[False].body)
    assert all(node["kind"] == "inst" for node in programs[True].body)
    assert programs[True].instance_count == programs[False].instance_count


def test_critical_path_names_helper_call_sites_tensors_and_iterations(tmp_path):
    kernel = Path(__file__).parent / "kernels" / "scaled_tiles.py"
    neff = tmp_path / "doubled.neff"
    assert (
        invoke("compile", str(kernel), "--arg", "x=float32[128,512]", "-o", str(neff)).exit_code
        == 0
    )
    x = np.arange(128 * 512, dtype=np.float32).reshape(128, 512)
    np.save(tmp_path / "x.npy", x)
    profile_path = tmp_path / "p.json"
    res = invoke(
        "run", str(neff), "--in", f"x={tmp_path / 'x.npy'}", "--out-dir", str(tmp_path),
        "--profile", str(profile_path),
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), 2 * x)
    path = json.loads(profile_path.read_text())["critical_path"]
    rows = {row["op"] + " " + row["tensors"]: row for row in path["by_instruction"]}
    store = next(r for k, r in rows.items() if k.startswith("dma_copy y"))
    name = kernel.name  # paths as given to compile
    assert store["loc"] == f"{name}:13"  # the helper's line
    assert store["stack"] == [f"{name}:20"]  # called from the kernel's loop body
    assert store["tensors"] == "y → out"
    assert store["last_iteration"] == {"col": 3}
    assert f"{name}:13 <- {name}:20" in res.output and "col=3" in res.output
