"""`--migrate` of the corpus harness on Beta 1 files written here: real `nkic migrate`,
`nkic check --nki 0.7` and verification runs, and the coverage section they give."""

from __future__ import annotations

import textwrap

import pytest

from benchmarks.corpus import migrate_runs
from benchmarks.corpus.discover import discover

# a tiled scale-and-add with a tail tile (mask), migrated to slices and `range`
TILED = """
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def scaled_sum(x, y):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    N = x.shape[0]
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    for t in nl.affine_range((N + 127) // 128):
        rows = t * 128 + i_p
        a = nl.load(x[rows, i_f], mask=(rows < N))
        b = nl.load(y[rows, i_f], mask=(rows < N))
        nl.store(out[rows, i_f], value=a * 2.0 + b, mask=(rows < N))
    return out
"""

# reads its input through an index that is not affine in the grids: left to the user
TRANSPOSED = """
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def flip(x):
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(64)[None, :]
    t = nl.load(x[i_p, i_f // 2])
    nl.store(out[i_p, i_f], value=t)
    return out
"""

SHAPES = """
[[kernel]]
file = "nki-samples/tiled.py"
entry = "scaled_sum"
args = { x = "float32[300,64]", y = "float32[300,64]" }

[[kernel]]
file = "nki-samples/flip.py"
entry = "flip"
limit = "the test reads its output through a helper"
"""


@pytest.mark.slow
def test_migrate_runs_check_verify_and_report(tmp_path):
    repo = tmp_path / "nki-samples"
    repo.mkdir()
    (repo / "tiled.py").write_text(textwrap.dedent(TILED))
    (repo / "flip.py").write_text(textwrap.dedent(TRANSPOSED))
    table = tmp_path / "shapes.toml"
    table.write_text(SHAPES)
    lines: list[str] = []
    results = migrate_runs.run_all(discover(tmp_path), 120, 1, lines.append, tables=(table,))
    by_file = {r["key"]: r for r in results}
    tiled, flip = by_file["nki-samples/tiled.py"], by_file["nki-samples/flip.py"]

    assert tiled["migrate"] == "ok" and tiled["todos"] == []
    assert tiled["check"]["status"] == "clean"
    assert [(v["entry"], v["status"]) for v in tiled["verify"]] == [("scaled_sum", "identical")]
    assert migrate_runs.file_status(tiled) == "ok"

    # the transposing grid stays, with its TODO, and the current-NKI check says why
    assert flip["migrate"] == "ok"
    assert [t["line"] for t in flip["todos"]] == [9, 10, 11]
    assert flip["check"]["status"] == "errors"
    assert "nl.arange" in flip["check"]["detail"]
    assert flip["verify"] == [{"entry": "flip", "status": "limit", "detail": SHAPES_LIMIT}]
    assert migrate_runs.file_status(flip) == "check errors"
    assert not list(repo.glob(".nkic-migrated-*"))  # the migrated twins are removed

    summary = migrate_runs.summary(results)
    assert (summary["files"], summary["migrated"], summary["clean"], summary["ok"]) == (2, 2, 1, 1)
    assert (summary["kernels_with_shapes"], summary["identical"], summary["todos"]) == (1, 1, 3)
    section = "\n".join(migrate_runs.markdown(results))
    assert "## Beta 1 kernels migrated to NKI 0.7" in section
    assert "| nki-samples/tiled.py | ok | clean | scaled_sum: identical |  |" in section
    assert "11: index i_f // 2 is not start" in section
    assert len(lines) == 2 and lines[-1].startswith("[migrate 2/2]")


SHAPES_LIMIT = "the test reads its output through a helper"


def test_shape_tables_first_entry_wins_and_missing_tables_are_skipped(tmp_path):
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    first.write_text('[[kernel]]\nfile = "r/f.py"\nentry = "k"\nargs = { a = "float32[4,4]" }\n')
    second.write_text(
        '[[kernel]]\nfile = "r/f.py"\nentry = "k"\nargs = { a = "float32[8,8]" }\n'
        '[[kernel]]\nfile = "r/f.py"\nentry = "j"\ngrid = "2,2"\n'
    )
    shapes = migrate_runs.load_shapes((first, tmp_path / "none.toml", second))
    assert [(k.entry, k.args, k.grid) for k in shapes["r/f.py"]] == [
        ("k", (("a", "float32[4,4]"),), ""),
        ("j", (), "2,2"),
    ]


def test_a_kernel_the_public_code_breaks_is_marked_as_such():
    results = [
        {
            "key": "r/broken.py",
            "migrate": "ok",
            "todos": [],
            "check": {"status": "clean"},
            "verify": [
                {"entry": "bad", "status": "not verified", "detail": "original: err_x: boom"},
                {"entry": "worse", "status": "not verified", "detail": "migrated: err_y: no"},
            ],
        },
        {
            "key": "r/other.py",
            "migrate": "ok",
            "todos": [],
            "check": {"status": "clean"},
            "verify": [{"entry": "k", "status": "not verified", "detail": "original: err_x"}],
        },
    ]
    section = "\n".join(migrate_runs.markdown(results, [{"key": "r/broken.py", "note": "n"}]))
    assert (
        "bad: not verified, a problem of the public code (below) (original: err_x: boom); "
        "worse: not verified (migrated: err_y: no)"
    ) in section
    assert "| k: not verified (original: err_x) |" in section


def test_outputs_within_tolerance_count_as_verified_with_their_explanation():
    detail = (
        "outputs within tolerance (max ulp error 3, max relative error 0.0021 <= 0.0156, "
        "explained by activation rounds to bfloat16 in the migrated kernel only); "
        "predicted latency 1.000 µs -> 1.000 µs"
    )
    results = [
        {
            "key": "r/close.py",
            "migrate": "ok",
            "todos": [],
            "check": {"status": "clean"},
            "verify": [
                {"entry": "k", "status": "identical", "detail": "outputs bit-identical"},
                {"entry": "j", "status": migrate_runs.TOLERANCE, "detail": detail},
            ],
        },
    ]
    assert migrate_runs.file_status(results[0]) == "ok"
    summary = migrate_runs.summary(results)
    assert (summary["identical"], summary["tolerance"], summary["differ"]) == (1, 1, 0)
    section = "\n".join(migrate_runs.markdown(results))
    assert "2 kernels with shapes identical, 1 within tolerance, 0 differ" in section
    assert (
        "k: identical; j: within tolerance (max ulp error 3, max relative error 0.0021 <= "
        "0.0156, explained by activation rounds to bfloat16"
    ) in section


# a kernel whose default argument fails its own assertion; its tests pass fast=False
ASSERTING = """
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def copy_rows(x, fast=True):
    assert fast == False, "fast path disabled"
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out
"""


def test_the_migrated_file_is_checked_as_its_tests_use_it(tmp_path):
    repo = tmp_path / "nki-samples"
    repo.mkdir()
    (repo / "asserting.py").write_text(textwrap.dedent(ASSERTING))
    (kf,) = discover(tmp_path)
    plain = migrate_runs.migrate_file(kf, [], 60)
    assert plain["check"]["status"] == "errors"
    assert plain["check"]["detail"].startswith("err_assert_failed")
    how = {"reason": "r", "args": {"copy_rows": {"fast": "False"}}}
    as_tested = migrate_runs.migrate_file(kf, [], 60, how)
    assert as_tested["check"]["status"] == "clean", as_tested["check"]
    assert migrate_runs.file_status(as_tested) == "ok"
