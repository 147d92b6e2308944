"""Absurd arguments and hostile files on the command line: one line, the right exit code."""

from __future__ import annotations

import hashlib
import json
import struct
import zlib

import pytest

from nkic.frontend.interp import loops

from .test_cli import assert_one_line_error, invoke


@pytest.fixture
def add_neff(tmp_path, examples):
    out = tmp_path / "add.neff"
    args = ["--arg", "a=float32[128,64]", "--arg", "b=float32[128,64]"]
    res = invoke("compile", str(examples / "tensor_add.py"), *args, "-o", str(out))
    assert res.exit_code == 0, res.output
    return out


def neff_file(path, program: dict):
    """A well-formed container (valid checksum) holding any program JSON."""
    payload = zlib.compress(json.dumps(program).encode())
    body = struct.pack("<4sIQQ", b"PROG", 1, 72, len(payload)) + payload
    head = struct.pack("<8sHHI32s", b"NKICNEFF", 1, 0, 1, hashlib.sha256(body).digest())
    path.write_bytes(head + body)
    return path


def inst(iid: int, op: str, engine: str, operands: dict) -> dict:
    loc = [0, 10 + iid, 1, 10 + iid, 20]
    return {"kind": "inst", "id": iid, "op": op, "engine": engine, "queue": engine,
            "operands": operands, "attrs": {}, "waits": [], "loc": loc}  # fmt: skip


HUGE = """import nki
import nki.language as nl
import nki.isa as nisa


@nki.jit
def huge(a):
    big = nl.ndarray((65536, 65536), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=big[0:128, 0:64], src=t)
    return big
"""


@pytest.fixture
def huge_neff(tmp_path):
    src = tmp_path / "huge.py"
    src.write_text(HUGE)
    out = tmp_path / "huge.neff"
    res = invoke("compile", str(src), "--arg", "a=float32[128,64]", "-o", str(out))
    assert res.exit_code == 0, res.output
    return out


def test_a_kernel_with_a_32_gib_output_compiles_but_its_run_reports_the_memory_limit(
    huge_neff, tmp_path
):
    res = invoke("run", str(huge_neff), "--out-dir", str(tmp_path))
    assert res.exit_code == 2
    assert_one_line_error(res, "GiB of memory (largest tensor: big)", "--max-memory")
    res = invoke("run", str(huge_neff), "--timing-only", "--out-dir", str(tmp_path))
    assert res.exit_code == 0, res.output


def test_max_memory_must_be_a_size(huge_neff):
    res = invoke("run", str(huge_neff), "--max-memory", "lots")
    assert res.exit_code == 2
    assert_one_line_error(res, "--max-memory: expected a size")


def test_a_negative_seed_is_a_usage_error(add_neff):
    res = invoke("run", str(add_neff), "--seed", "-1")
    assert res.exit_code == 2
    assert "-1 is not in the range x>=0" in res.output


def test_a_misspelt_select_code_is_a_usage_error(examples):
    res = invoke("check", str(examples / "tensor_add.py"), "--select", "err_no_such_code")
    assert res.exit_code == 2
    assert_one_line_error(res, "--select: no diagnostic code is or starts with 'err_no_such_code'")


def test_a_code_prefix_is_a_valid_select(examples):
    res = invoke("check", str(examples / "tensor_add.py"), "--select", "err_")
    assert res.exit_code == 0, res.output


def test_an_empty_input_file_is_a_clean_error(add_neff, tmp_path):
    empty = tmp_path / "a.npy"
    empty.write_bytes(b"")
    res = invoke("run", str(add_neff), "--in", f"a={empty}")
    assert res.exit_code == 2
    assert "Aborted" not in res.output
    assert_one_line_error(res, "is not a .npy array file")


def test_an_input_header_declaring_a_huge_array_is_refused_before_allocation(add_neff, tmp_path):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576), }"
    header = header.ljust(118) + "\n"
    path = tmp_path / "a.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    res = invoke("run", str(add_neff), "--in", f"a={path}")
    assert res.exit_code == 2
    assert_one_line_error(res, "holds an array of shape [1048576, 1048576]", "expects [128, 64]")


def test_a_directory_is_not_a_neff(tmp_path):
    res = invoke("run", str(tmp_path))
    assert res.exit_code == 2
    assert_one_line_error(res, "is not a regular file")


def test_escape_codes_in_a_neff_never_reach_the_terminal(tmp_path):
    program = {"kernel": "k\x1b[2J", "target": "trn2", "files": [], "tensors": [],
               "inputs": [], "outputs": [], "body": []}  # fmt: skip
    path = neff_file(tmp_path / "evil.neff", program)
    res = invoke("run", str(path))
    assert res.exit_code == 2
    assert "\x1b" not in res.output
    assert_one_line_error(res, "kernel name 'k\\x1b[2J' contains control characters")


def test_profile_reports_a_runtime_fault_as_a_fault(tmp_path):
    tile = {"id": 0, "name": "a", "kind": "internal", "buffer": "sbuf", "dtype": "float32",
            "shape": [128, 64], "address": {"partition": 0, "byte": 0}}  # fmt: skip
    whole = {"tensor": 0, "offset": 0, "pattern": [[64, 128], [1, 64]]}
    race = [  # two engines write one tile, neither waits: a missing semaphore
        inst(0, "memset", "vector", {"dst": whole, "value": {"imm": 0.0}}),
        inst(1, "memset", "gpsimd", {"dst": whole, "value": {"imm": 1.0}}),
    ]
    program = {"kernel": "k", "target": "trn2", "files": ["k.py"], "tensors": [tile],
               "inputs": [], "outputs": [], "body": race}  # fmt: skip
    path = neff_file(tmp_path / "race.neff", program)
    res = invoke("profile", str(path), "-o", str(tmp_path / "t.svg"))
    assert res.exit_code == 1
    assert "runtime fault: missing semaphore" in res.output
    assert "internal error" not in res.output


def test_inputs_from_a_fifo_are_refused(add_neff, tmp_path):
    import os

    fifo = tmp_path / "a.npy"
    os.mkfifo(fifo)
    res = invoke("run", str(add_neff), "--in", f"a={fifo}")
    assert res.exit_code == 2
    assert_one_line_error(res, "is not a regular file")


KERNEL_HEAD = """import nki
import nki.language as nl


@nki.jit
def k(a):
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
"""


def check_json(path) -> list[dict]:
    res = invoke("check", str(path), "--arg", "a=float32[128,64]", "--format", "json")
    assert res.exit_code == 1, res.output
    assert "internal error" not in res.output
    return json.loads(res.output)


def test_a_spent_loop_budget_ends_the_kernel_without_follow_on_errors(tmp_path, monkeypatch):
    # every loop after the budget is spent would fail too, and values it cut short would
    # raise their own errors: only the limit itself is reported (a budget of 200,000
    # iterations of compile-time Python, a fifth of the real one, for a quick test)
    monkeypatch.setattr(loops, "MAX_PYTHON_ITERATIONS", 200_000)
    body = (
        "    xs = []\n"
        "    for i in range(1000):\n"
        "        for j in range(1000):\n"
        "            xs.append(j)\n"
        "    n = 0\n"
        "    for i in range(10):\n"
        "        n += xs[i * 100000]\n"
    )
    path = tmp_path / "budget.py"
    path.write_text(KERNEL_HEAD + body + "    return out\n")
    diags = check_json(path)
    assert [(d["code"], d["line"]) for d in diags] == [("err_specialisation_limit", 10)], diags


def test_a_source_that_is_not_utf8_is_a_syntax_error_on_its_line(tmp_path):
    path = tmp_path / "latin1.py"
    path.write_bytes(KERNEL_HEAD.encode() + b"    # caf\xe9\n    return out\n")
    (diag,) = check_json(path)
    assert (diag["code"], diag["line"]) == ("err_syntax_error", 8)
    assert "not valid UTF-8 (byte 0xe9" in diag["message"]


def test_an_expression_too_deep_for_the_parser_is_a_syntax_error(tmp_path):
    path = tmp_path / "deep.py"
    path.write_text(KERNEL_HEAD + "    v = " + "+".join(["1"] * 20000) + "\n    return out\n")
    (diag,) = check_json(path)
    assert diag["code"] == "err_syntax_error"
    assert "nests expressions too deeply" in diag["message"]


def test_address_on_an_hbm_tensor_is_an_invalid_argument(tmp_path):
    path = tmp_path / "addr.py"
    line = "    t = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.hbm, address=(0, 0))\n"
    path.write_text(KERNEL_HEAD + line + "    return out\n")
    diags = check_json(path)
    assert [(d["code"], d["line"]) for d in diags] == [("err_invalid_argument", 8)]
    assert "a hbm tensor has no address" in diags[0]["message"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "    n = 0\n    for i in range(3 * 10**8):\n        n += i\n",
            "iterating over 300000000 values at specialisation exceeds the limit of 1000000",
        ),
        (
            "    x = [1]\n    for i in range(40):\n        x = x + x\n",
            "a sequence of more than 1000000 items",
        ),
        ("    v = math.factorial(10**7)\n", "math.factorial(10000000) has more than 1048576 bits"),
        ("    v = math.comb(10**7, 5 * 10**6)\n", "math.comb(10000000, 5000000) has more than"),
    ],
)
def test_specialisation_work_is_bounded_with_a_diagnostic(tmp_path, body, message):
    path = tmp_path / "work.py"
    path.write_text("import math\n" + KERNEL_HEAD + body + "    return out\n")
    diags = check_json(path)
    assert [d["code"] for d in diags] == ["err_specialisation_limit"], diags
    assert message in diags[0]["message"]
