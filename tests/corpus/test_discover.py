"""Kernel-file discovery and dialect classification, on corpora written by the tests."""

from __future__ import annotations

import ast
import textwrap

import pytest

from benchmarks.corpus.discover import BETA1, CURRENT, _classify_unparsable, classify, discover
from nkic.frontend.languages import BETA1 as BETA1_LANGUAGE
from nkic.frontend.languages import for_file


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip()


def test_current_kernel_decorated_with_nki_jit():
    assert classify(
        src(
            """
            import nki
            import nki.language as nl

            @nki.jit
            def add(a, b):
                return a
            """
        )
    ) == (CURRENT, ("add",))


def test_beta1_by_its_imports_and_every_entry_point_form():
    dialect, kernels = classify(
        src(
            """
            from neuronxcc import nki
            import neuronxcc.nki.language as nl
            from neuronxcc.nki import baremetal

            @nki.jit(mode="simulation")
            def a(x):
                return x

            @baremetal
            def b(x):
                return x

            @nki.compiler.skip_middle_end_transformations
            @nki.benchmark(warmup=1)
            def c(x):
                return x

            def d(x):
                return x

            e = nki.simulate_kernel(d, 1)
            """
        )
    )
    assert dialect == BETA1
    assert kernels == ("a", "b", "c", "d")


def test_alias_of_an_entry_point_and_torch_neuronx_nki_jit():
    dialect, kernels = classify(
        src(
            """
            from torch_neuronx import nki_jit
            import neuronxcc.nki as nki
            trace = nki.trace

            @nki_jit
            def a(x):
                return x

            @trace
            def b(x):
                return x
            """
        )
    )
    assert (dialect, kernels) == (BETA1, ("a", "b"))


def test_wrapping_an_imported_kernel_does_not_make_a_kernel_file():
    source = "from neuronxcc import nki\nfrom pkg.attention import flash_fwd\n"
    source += "bench = nki.benchmark(warmup=5)(flash_fwd)\n"
    assert classify(source) == (BETA1, ())


@pytest.mark.parametrize(
    ("imports", "dialect"),
    [
        ("import nki\nimport neuronxcc.nki as old\n", CURRENT),
        ("import nki.language as nl\nfrom torch_neuronx import nki_jit\n", CURRENT),
        ("import neuronxcc.nki.language as nl\nfrom torch_neuronx import nki_jit\n", BETA1),
        ("from neuronxcc import nki\n", BETA1),
        ("import nki\n", CURRENT),
        ("from torch_neuronx import nki_jit\n", BETA1),
    ],
)
def test_the_dialect_is_the_one_nkic_compiles_the_file_in(imports, dialect):
    """A file importing both dialects is a current file whose Beta 1 import nkic reports:
    the harness files it where nkic's language choice puts it."""
    source = imports + "@nki.jit\ndef k(a):\n  pass\n"
    assert classify(source)[0] == dialect
    nkic_reads_beta1 = for_file(ast.parse(source), None) is BETA1_LANGUAGE
    assert nkic_reads_beta1 == (dialect == BETA1)
    assert _classify_unparsable(source)[0] == dialect


def test_non_nki_decorators_and_torch_neuronx_alone_are_not_kernels():
    assert classify(
        src(
            """
            import torch_neuronx
            import pytest

            @pytest.mark.parametrize("x", [1])
            def test_x(x):
                pass

            model = torch_neuronx.trace(test_x, 1)
            """
        )
    ) == (None, ())
    # an NKI helper module without kernels
    assert classify("import nki.language as nl\n\ndef helper(x):\n    return nl.exp(x)\n") == (
        CURRENT,
        (),
    )


def test_a_file_python_cannot_parse_is_still_found():
    dialect, kernels = classify("import nki\n\n@nki.jit\ndef broken(a):\n    return (\n")
    assert (dialect, kernels) == (CURRENT, ("broken",))


def test_discover_walks_the_three_repositories(tmp_path):
    (tmp_path / "nki-library" / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "nki-library" / "src" / "pkg" / "k.py").write_text(
        "import nki\n@nki.jit\ndef k(a):\n    return a\n"
    )
    (tmp_path / "nki-library" / "src" / "pkg" / "helper.py").write_text("import nki\n")
    (tmp_path / "nki-samples" / ".git").mkdir(parents=True)
    (tmp_path / "nki-samples" / ".git" / "k.py").write_text(
        "import nki\n@nki.jit\ndef k(a):\n    return a\n"
    )
    (tmp_path / "nki-samples" / "t.py").write_text(
        "from neuronxcc import nki\n@nki.jit\ndef t(a):\n    return a\n"
    )
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "k.py").write_text("import nki\n@nki.jit\ndef k(a):\n    return a\n")
    found = discover(tmp_path)
    assert [(f.key, f.dialect, f.kernels) for f in found] == [
        ("nki-library/src/pkg/k.py", CURRENT, ("k",)),
        ("nki-samples/t.py", BETA1, ("t",)),
    ]
