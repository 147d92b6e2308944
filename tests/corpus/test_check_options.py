"""`[[check]]` in the corpus notes: a file is checked with the NKI version, logical-core degree
and kernel arguments its tests use, and the report says so."""

from __future__ import annotations

from benchmarks.corpus.__main__ import check_file, load_check_options
from benchmarks.corpus.discover import KernelFile
from benchmarks.corpus.report import how_checked, render_markdown

# asserts a parameter whose default it rejects, and runs only at LNC=2
KERNEL = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def wrapper(a, in_sbuf: bool = False):
    assert in_sbuf
    assert nl.num_programs(0) == 2
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=out, src=t)
    return out
"""

NOTES = """
[[check]]
path = "nki-samples/wrapper.py"
lnc = 2
args = { wrapper = { in_sbuf = "True", a = "float32[128,64]" } }
reason = "the test sets in_sbuf and launches two cores"
"""


def test_a_file_is_checked_with_the_options_its_test_uses(tmp_path):
    src = tmp_path / "nki-samples" / "wrapper.py"
    src.parent.mkdir()
    src.write_text(KERNEL)
    notes = tmp_path / "notes.toml"
    notes.write_text(NOTES)
    how = load_check_options(notes)["nki-samples/wrapper.py"]
    assert how["lnc"] == 2 and how["args"]["wrapper"]["in_sbuf"] == "True"
    kf = KernelFile("nki-samples", "wrapper.py", "current", ("wrapper",), str(src))

    plain = check_file(kf, tmp_path, 120)
    assert plain["status"] == "diagnostics"
    assert plain["errors"][0]["code"] == "err_assert_failed" and "how" not in plain

    only_lnc = check_file(kf, tmp_path, 120, {"lnc": 2, "reason": "r"})
    assert only_lnc["status"] == "diagnostics"  # the default in_sbuf=False still fails

    checked = check_file(kf, tmp_path, 120, how)
    assert checked["status"] == "ok", checked["errors"]
    assert how_checked(how) == "LNC=2; wrapper(in_sbuf=True, a=float32[128,64])"

    results = {"meta": {}, "files": [checked], "library": [], "skipped": [], "findings": []}
    md = render_markdown(results)
    assert "| clean (checked with LNC=2; wrapper(in_sbuf=True, a=float32[128,64])) |" in md
    assert "| the test sets in_sbuf and launches two cores |" in md
