"""`python -m benchmarks.corpus` on a small corpus written here: real nkic runs, the report,
the results JSON, numerics against a reference, and --compare."""

from __future__ import annotations

import json
import textwrap

import pytest

from benchmarks.corpus.__main__ import main

ADD = """
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def {name}(input_a, input_b):
    P, F = input_a.shape
    out = nl.ndarray((P, F), dtype=input_a.dtype, buffer=nl.shared_hbm)
    a = nl.ndarray((P, F), dtype=input_a.dtype, buffer=nl.sbuf)
    b = nl.ndarray((P, F), dtype=input_b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=input_a)
    nisa.dma_copy(dst=b, src=input_b)
    c = nl.ndarray((P, F), dtype=input_a.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=c, data1=a, data2=b, op=nl.{op})
    nisa.dma_copy(dst=out, src=c)
    return out
"""

BROKEN = """
import nki
import nki.language as nl


@nki.jit
def broken(a):
    return nl.no_such_function(a)
"""

SHAPES = """
[[kernel]]
name = "{name}"
file = "src/{name}.py"
entry = "{name}"
test = "test/test_{name}.py"
reference = "elementwise_add"

[[kernel.case]]
id = "p128_f64"
args = {{ input_a = "float32[128,64]", input_b = "float32[128,64]" }}
lnc = 1
tolerance = {{ atol = 1e-6, rtol = 1e-6 }}
"""


@pytest.mark.slow
def test_corpus_run_report_numerics_and_compare(tmp_path, capsys):
    corpus = tmp_path / "corpus"
    src = corpus / "nki-library" / "src"
    src.mkdir(parents=True)
    (src / "add.py").write_text(ADD.format(name="add", op="add"))
    (src / "sub.py").write_text(ADD.format(name="sub", op="subtract"))
    (corpus / "nki-samples").mkdir()
    (corpus / "nki-samples" / "broken.py").write_text(textwrap.dedent(BROKEN))
    (corpus / "nki-samples" / "skip_me.py").write_text(textwrap.dedent(BROKEN))
    # a kernel made by a module-level wrap, which the file-level check finds (it used to miss it)
    (corpus / "nki-samples" / "wrapped.py").write_text(
        "import nki\nimport nki.language as nl\n\n\ndef broken(a):\n"
        "    return nl.no_such_function(a)\n\n\nkernel = nki.jit(broken)\n"
    )
    shapes = tmp_path / "shapes.toml"
    shapes.write_text(SHAPES.format(name="add") + SHAPES.format(name="sub"))
    notes = tmp_path / "notes.toml"
    notes.write_text(
        '[[file]]\npath = "nki-samples/skip_me.py"\nreason = "not a kernel"\n'
        '[[finding]]\npath = "nki-samples/broken.py"\nnote = "calls an API that does not exist"\n'
    )
    out_json, out_md = tmp_path / "last.json", tmp_path / "coverage.md"
    argv = ["--corpus", str(corpus), "--shapes", str(shapes), "--notes", str(notes)]
    argv += ["--json", str(out_json), "--out", str(out_md), "--numerics", "--jobs", "2"]
    assert main(argv) == 0

    res = json.loads(out_json.read_text())
    files = {f["key"]: f for f in res["files"]}
    assert files["nki-library/src/add.py"]["status"] == "ok"
    broken = files["nki-samples/broken.py"]
    assert broken["status"] == "diagnostics"
    assert broken["errors"][0]["file"] == "nki-samples/broken.py"  # relative to the corpus
    wrapped = files["nki-samples/wrapped.py"]
    assert wrapped["status"] == "diagnostics"
    assert wrapped["errors"][0]["code"] == "err_unknown_api"
    assert res["skipped"] == [{"key": "nki-samples/skip_me.py", "reason": "not a kernel"}]
    (add,) = res["library"][0]["cases"]
    (sub,) = res["library"][1]["cases"]
    assert (add["compile"], add["run"]) == ("ok", "ok")
    assert add["latency_ns"] > 0
    assert add["numerics"].startswith("match")
    assert sub["numerics"].startswith("mismatch: ")  # a - b is not a + b

    md = out_md.read_text()
    assert "| nki-library | current | 2 | 2 | 0 | 0 | 0 | 0 |" in md
    assert "| nki-samples | current | 2 | 0 | 2 | 0 | 0 | 0 |" in md
    assert "1 case(s) match, 1 mismatch; 1 of the 2 kernels with a reference match" in md
    assert "| add | `elementwise_add` | 1 | 1 | 0 | 0 | 0 | match |  |" in md
    assert "| sub | `elementwise_add` | 1 | 0 | 1 | 0 | 0 | mismatch | mismatch: " in md
    assert "| nki-samples/broken.py | calls an API that does not exist |" in md

    # a second run compared with the first: nothing changed
    capsys.readouterr()
    argv2 = ["--corpus", str(corpus), "--notes", str(notes), "--no-library"]
    argv2 += ["--json", str(tmp_path / "second.json"), "--out", str(tmp_path / "second.md")]
    argv2 += ["--compare", str(out_json)]
    assert main(argv2) == 0
    printed = capsys.readouterr().out
    assert "gone    case add[p128_f64] (was run ok)" in printed
    assert "files clean: 2 -> 2; cases running: 2 -> 0" in printed


def test_a_run_writes_a_report_only_where_asked(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    corpus = tmp_path / "corpus"
    (corpus / "nki-samples").mkdir(parents=True)
    (corpus / "nki-samples" / "broken.py").write_text(textwrap.dedent(BROKEN))
    monkeypatch.chdir(tmp_path)
    committed = Path(__file__).resolve().parents[2] / "docs" / "coverage.md"
    before = committed.read_bytes()
    argv = ["--corpus", str(corpus), "--no-library", "--json", str(tmp_path / "r.json")]
    assert main(argv) == 0
    assert committed.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "r.json"]
    assert "report:" not in capsys.readouterr().out


def test_a_directory_without_the_repositories_is_a_one_line_error(tmp_path, capsys):
    assert main(["--corpus", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "make corpus CORPUS=DIR" in err and err.count("\n") == 1
