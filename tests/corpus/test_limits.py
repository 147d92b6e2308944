"""`[[limit]]` in the corpus notes: a known limit of nkic explains the library cases it covers
that do not compile, and none that do."""

from __future__ import annotations

from benchmarks.corpus.__main__ import load_limits, note_limits

NOTES = """
[[finding]]
path = "nki-samples/a.py"
note = "not a limit"

[[limit]]
kernel = "big"
case = "_T8192_"
note = "known limit: too much compile-time Python"
"""


def test_a_limit_notes_the_failing_cases_it_covers(tmp_path):
    path = tmp_path / "notes.toml"
    path.write_text(NOTES)
    limits = load_limits(path)
    assert limits == [
        {"kernel": "big", "case": "_T8192_", "note": "known limit: too much compile-time Python"}
    ]
    failing = {"compile": "diagnostics"}
    compiled = {"compile": "ok"}
    other_shape = {"compile": "diagnostics"}
    other_kernel = {"compile": "timeout"}
    annotated = {"compile": "timeout", "note": "the test runs at LNC=2"}
    note_limits(limits, "big", "H64_T8192_E4", failing)
    note_limits(limits, "big", "H64_T8192_E8", compiled)
    note_limits(limits, "big", "H64_T1024_E4", other_shape)
    note_limits(limits, "small", "H64_T8192_E4", other_kernel)
    note_limits(limits, "big", "H32_T8192_E4", annotated)
    assert failing["note"] == "known limit: too much compile-time Python"
    assert "note" not in compiled and "note" not in other_shape and "note" not in other_kernel
    assert annotated["note"] == "the test runs at LNC=2; known limit: too much compile-time Python"


def test_no_notes_file_has_no_limits(tmp_path):
    assert load_limits(tmp_path / "missing.toml") == []
