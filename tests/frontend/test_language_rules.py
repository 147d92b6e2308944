"""Rules of current NKI that nkic used to reject (false positives), and kernel discovery:
`tensor == None`, `is` and list returns in NKI 0.7, loop-carried dependencies in
`nl.affine_range` (a warning from NKI 0.3 on), a kernel called from a kernel (inlined with a
warning), and every way a file marks a kernel."""

import numpy as np
import pytest

import nkic
from nkic.driver import check_file
from nkic.frontend import find_kernels
from nkic.frontend.languages import NKI_0_7
from tests.deprecations import without_loop_deprecations

HEADER = (
    "import nki\nimport nki.isa as nisa\nimport nki.language as nl\nimport nki.typing as nt\n\n"
)
FIRST = HEADER.count("\n") + 1  # file line of the body's first line


def write(tmp_path, body: str, name: str = "kernel.py"):
    path = tmp_path / name
    path.write_text(HEADER + body)
    return path


def summary(diags):
    return [(d.code, d.severity, d.loc.line - FIRST + 1, d.loc.col) for d in diags]


NONE_COMPARE = """@nki.jit
def kernel(a: nt.tensor[128, 512], b=None):
    assert a != None
    assert not (a == None)
    assert b == None
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
"""


@pytest.mark.parametrize("nki", ["0.3", "0.7"])
def test_tensor_compared_with_none(tmp_path, nki):
    assert nkic.check(write(tmp_path, NONE_COMPARE), nki=nki) == []


def test_tensor_compared_with_a_tensor_is_still_an_error(tmp_path):
    body = NONE_COMPARE.replace("assert a != None", "assert a != a")
    assert [d.code for d in nkic.check(write(tmp_path, body))] == ["err_tensor_operator"]


IDENTITY = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    x = [1]
    y = x
    assert y is x
    assert [1] is not x
"""


def test_is_compares_identity_in_0_7(tmp_path):
    assert nkic.check(write(tmp_path, IDENTITY), nki="0.7") == []
    failing = IDENTITY.replace("assert y is x", "assert y is not x")
    (d,) = nkic.check(write(tmp_path, failing), nki="0.7")
    assert (d.code, d.loc.line - FIRST + 1) == ("err_assert_failed", 5)


def test_is_against_other_values_than_none_before_0_7(tmp_path):
    diags = nkic.check(write(tmp_path, IDENTITY), nki="0.6")
    assert summary(diags) == [
        ("err_unsupported_syntax", "error", 5, 12),
        ("err_unsupported_syntax", "error", 6, 12),
    ]


# every iteration writes the same 128 columns: a loop-carried (write-after-write) dependency
RACE = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        t = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[:, i * 128:(i + 1) * 128])
        nisa.dma_copy(dst=out, src=t)
    return out
"""


def test_affine_dependency_is_a_warning_and_runs_in_order(tmp_path):
    path = write(tmp_path, RACE)
    (d,) = without_loop_deprecations(nkic.check(path))
    assert summary([d]) == [("err_unexpected_output_dependencies", "warning", 7, 9)]
    assert "runs `nl.affine_range` iterations in order" in d.hint
    assert "nl.sequential_range" in d.hint
    a = np.random.default_rng(0).standard_normal((128, 512)).astype(np.float32)
    out = nkic.compile(str(path), kernel="kernel")(a)
    np.testing.assert_array_equal(out, a[:, 384:512])  # the last iteration's write


def test_affine_dependency_is_an_error_where_the_language_says_so(tmp_path):
    strict = NKI_0_7.derive("parallel loops", "0.7", rules={"affine_dependency": "error"})
    diags = without_loop_deprecations(check_file(str(write(tmp_path, RACE)), nki=strict))
    assert summary(diags) == [("err_unexpected_output_dependencies", "error", 7, 9)]
    assert "may run in any order" in diags[0].related[-1].message


NESTED = """@nki.jit
def copy_into(dst, src):
    nisa.dma_copy(dst=dst, src=src)


@nki.jit
def kernel(a: nt.tensor[128, 512]):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, a.dtype, buffer=nl.sbuf)
    copy_into(t, a)
    copy_into(out, t)
    return out
"""


def test_kernel_called_from_a_kernel_is_inlined_with_a_warning(tmp_path):
    path = write(tmp_path, NESTED)
    diags = nkic.check(path, kernel="kernel")
    assert summary(diags) == [
        ("err_nested_kernel_call", "warning", 10, 5),
        ("err_nested_kernel_call", "warning", 11, 5),
    ]
    a = np.random.default_rng(1).standard_normal((128, 512)).astype(np.float32)
    np.testing.assert_array_equal(nkic.compile(str(path), kernel="kernel")(a), a)


def test_nested_kernel_call_in_a_kernel_without_shapes_is_a_warning(tmp_path):
    path = write(tmp_path, NESTED.replace("a: nt.tensor[128, 512]", "a"))
    codes = [(d.code, d.severity) for d in nkic.check(path, kernel="kernel")]
    assert ("err_nested_kernel_call", "warning") in codes


# one deliberate error per kernel shows that each was found and specialised
FORMS = """from nki import jit as j

jit = nki.jit


def wrap(f):
    def run(*args):
        return f(*args)

    return run


@j
def by_alias(a: nt.tensor[128, 512]):
    x = nl.bogus1


@jit
def by_assigned_alias(a: nt.tensor[128, 512]):
    x = nl.bogus2


def wrapped_at_call_site(a: nt.tensor[128, 512]):
    x = nl.bogus3


def host_code(a):
    return nki.jit(wrapped_at_call_site)(a)


def with_mode(a: nt.tensor[128, 512]):
    x = nl.bogus4


with_mode_kernel = nki.jit(mode="trace")(with_mode)


@wrap
@nki.jit
def user_decorated(a: nt.tensor[128, 512]):
    x = nl.bogus5


def helper(a):
    return a
"""


def test_every_kernel_form_is_found_and_checked(tmp_path):
    path = write(tmp_path, FORMS)
    names = [n for n, _ in find_kernels(str(path))]
    assert names == [
        "by_alias",
        "by_assigned_alias",
        "wrapped_at_call_site",
        "with_mode",
        "user_decorated",
    ]
    diags = nkic.check(path)
    assert sorted(d.message.split("'")[-2] for d in diags) == [f"bogus{i}" for i in range(1, 6)]
    assert {d.code for d in diags} == {"err_unknown_api"}


UNCHECKED = """from torch_neuronx import nki_jit


@nki.baremetal
def by_baremetal(a: nt.tensor[128, 512]):
    pass


@nki_jit
def by_torch_neuronx(a: nt.tensor[128, 512]):
    pass


def benchmarked(a):
    pass


timed = nki.benchmark(warmup=1, iters=2)(benchmarked)


@nki.jit
def checked(a: nt.tensor[128, 512]):
    pass
"""


def test_kernel_forms_nkic_does_not_check_are_errors(tmp_path):
    diags = nkic.check(write(tmp_path, UNCHECKED))
    assert summary(diags) == [
        ("nkic_kernel_not_checked", "error", 14, 5),
        ("nkic_kernel_not_checked", "error", 5, 5),
    ]  # (the unsupported forms are module-level code the checked kernel does not use)
    assert "nki.benchmark(warmup=1, iters=2)(benchmarked)" in diags[0].message
    assert "@nki.baremetal" in diags[1].message
    assert all("-k" in d.hint for d in diags[:2])
    # torch-neuronx's `nki_jit` is `nki.jit` under another name: a kernel like `checked`
    assert [name for name, _ in find_kernels(str(write(tmp_path, UNCHECKED)))] == [
        "by_torch_neuronx",
        "checked",
    ]


def test_an_unchecked_form_alone_is_still_reported(tmp_path):
    body = "@nki.baremetal\ndef k(a):\n    pass\n"
    assert summary(nkic.check(write(tmp_path, body))) == [
        ("nkic_kernel_not_checked", "error", 2, 5)
    ]


def test_a_file_with_only_helpers_stays_clean(tmp_path):
    body = "def helper(a):\n    return nki.isa.dma_copy\n"
    assert nkic.check(write(tmp_path, body)) == []


def test_nested_kernel_call_is_an_error_where_the_language_says_so(tmp_path):
    strict = NKI_0_7.derive("no nesting", "0.7", rules={"nested_kernel_call": "error"})
    diags = check_file(str(write(tmp_path, NESTED)), "kernel", nki=strict)
    assert summary(diags) == [
        ("err_nested_kernel_call", "error", 10, 5),
        ("err_nested_kernel_call", "error", 11, 5),
    ]
    assert "cannot be called from a kernel" in diags[0].message


def test_affine_dependency_stays_an_error_in_beta1(tmp_path):
    body = RACE.replace("@nki.jit\ndef kernel(a: nt.tensor[128, 512]):", "@nki.jit\ndef kernel(a):")
    path = tmp_path / "beta1.py"
    beta1 = "import neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\n"
    path.write_text(beta1 + "import neuronxcc.nki.language as nl\n\n" + body)
    diags = nkic.check(path, a=nkic.TensorSpec((128, 512), "float32"))
    assert [(d.code, d.severity, d.loc.line) for d in diags] == [
        ("err_unexpected_output_dependencies", "error", 11)
    ]


# outputs built up in a list, as kernels that return a variable number of tensors do
LIST_RETURN = """@nki.jit
def kernel(a: nt.tensor[128, 512]):
    outputs = []
    for scale in (2.0, 3.0):
        t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=scale)
        out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        outputs.append(out)
    return outputs
"""


def test_a_list_of_tensors_is_returned_in_0_7(tmp_path):
    path = write(tmp_path, LIST_RETURN)
    assert nkic.check(path) == []
    a = np.random.default_rng(1).standard_normal((128, 512)).astype(np.float32)
    doubled, tripled = nkic.compile(str(path), kernel="kernel")(a)
    np.testing.assert_array_equal(doubled, a * 2)
    np.testing.assert_array_equal(tripled, a * 3)


def test_a_list_return_before_0_7_asks_for_a_tuple(tmp_path):
    (d,) = nkic.check(write(tmp_path, LIST_RETURN), nki="0.6")
    assert summary([d]) == [("err_type_error", "error", 11, 12)]
    assert "not a list" in d.message and "tuple(" in d.hint
    tupled = LIST_RETURN.replace("return outputs", "return tuple(outputs)")
    assert nkic.check(write(tmp_path, tupled), nki="0.6") == []


def test_a_list_holding_something_else_is_still_an_error(tmp_path):
    body = LIST_RETURN.replace("return outputs", "return outputs + [1]")
    (d,) = nkic.check(write(tmp_path, body))
    assert (d.code, d.message) == ("err_type_error", "a kernel returns tensors, not int")


# a tensor where Python wants a truth value, as kernels test optional tensor arguments
TRUTH = """@nki.jit
def kernel(a: nt.tensor[128, 512], bias: nt.tensor[128, 512]):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    if bias:
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    assert bias
    scale = 5.0 if not bias else 3.0
    src = bias and t
    nisa.tensor_scalar(dst=t, data=src, op0=nl.multiply, operand0=scale)
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def test_a_tensor_is_true_in_0_7_with_a_warning_at_each_use(tmp_path):
    path = write(tmp_path, TRUTH)
    diags = nkic.check(path)
    assert summary(diags) == [
        ("nkic_tensor_truth_is_object", "warning", line, col)
        for line, col in ((6, 8), (8, 12), (9, 24), (10, 11))
    ]
    assert "`t is not None`" in diags[0].hint
    a = np.random.default_rng(2).standard_normal((128, 512)).astype(np.float32)
    out = nkic.compile(str(path), kernel="kernel")(a, a)
    np.testing.assert_array_equal(out, a * 6)  # the branch taken, then `bias and t` is t


def test_a_tensors_truth_value_is_an_error_before_0_7(tmp_path):
    diags = nkic.check(write(tmp_path, TRUTH), nki="0.6")
    assert {(d.code, d.severity) for d in diags} <= {
        ("err_dynamic_control_flow_not_supported", "error"),
        ("err_ambiguous_tensor_truth_value", "error"),
    }
    assert summary(diags)[0] == ("err_dynamic_control_flow_not_supported", "error", 6, 8)


TRY = """def checked(n):
    if n > 4:
        raise ValueError(f"n={n} too big")
    return n


@nki.jit
def kernel(a: nt.tensor[128, 512]):
    try:
        checked(9)
        got = "no"
    except (KeyError, ValueError) as e:
        got = str(e)
    else:
        got = "else"
    finally:
        done = True
    assert got == "n=9 too big" and done
    try:
        assert a.shape[0] == 3, "rows"
    except AssertionError as e:
        got = str(e)
    assert got == "rows"
    try:
        v = checked(2)
    except Exception:
        v = -1
    else:
        v += 10
    assert v == 12
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
"""


def test_try_except_else_finally_handle_the_kernels_exceptions_in_0_7(tmp_path):
    assert nkic.check(write(tmp_path, TRY), nki="0.7") == []
    # a handler for another class lets the exception through, after the finally block
    unhandled = TRY.replace("except (KeyError, ValueError) as e:", "except KeyError as e:")
    unhandled = unhandled.replace("done = True", "done = True\n        print('finally ran')")
    diags = nkic.check(write(tmp_path, unhandled), nki="0.7")
    assert [(d.code, d.message) for d in diags] == [
        ("err_raised_exception", "ValueError: n=9 too big")
    ]
    # a diagnostic that is no exception of the kernel is not caught
    broken = TRY.replace("checked(9)", "nl.no_such_api(9)")
    codes = [d.code for d in nkic.check(write(tmp_path, broken), nki="0.7")]
    assert codes[0] == "err_unknown_api"


def test_try_is_outside_the_subset_before_0_7(tmp_path):
    diags = nkic.check(write(tmp_path, TRY), nki="0.6")
    assert [(d.code, d.loc.line - FIRST + 1) for d in diags] == [
        ("err_unsupported_syntax", 9),
        ("err_unsupported_syntax", 19),
        ("err_unsupported_syntax", 24),
    ]


WITH = """LOG = []


class Scope:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        LOG.append("in " + self.name)
        return self.name.upper()

    def __exit__(self, kind, exc, tb):
        LOG.append("out " + self.name)
        return kind is ValueError


@nki.jit
def kernel(a: nt.tensor[128, 512]):
    with Scope("a") as x, Scope("b") as y:
        assert (x, y) == ("A", "B")
    with Scope("c"):
        raise ValueError("suppressed by __exit__")
    assert LOG == ["in a", "in b", "out b", "out a", "in c", "out c"], LOG
    with nl.no_reorder():
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
    return out
"""


def test_with_runs_enter_and_exit_of_python_objects_in_0_7(tmp_path):
    assert nkic.check(write(tmp_path, WITH), nki="0.7") == []
    kept = WITH.replace("return kind is ValueError", "return False")
    diags = nkic.check(write(tmp_path, kept), nki="0.7")
    assert [(d.code, d.message) for d in diags] == [
        ("err_raised_exception", "ValueError: suppressed by __exit__")
    ]
    d = nkic.check(write(tmp_path, WITH.replace('Scope("c")', "range(3)")), nki="0.7")[0]
    assert d.code == "err_unsupported_syntax"
    assert d.message == "`range(3)` is not a context manager (no __enter__ and __exit__ methods)"
    first = nkic.check(write(tmp_path, WITH), nki="0.6")[0]  # only `with nl.no_reorder():`
    assert (first.code, first.loc.line - FIRST + 1) == ("err_unsupported_syntax", 19)


GENERATORS = """def evens(n):
    for i in range(n):
        if i == 3:
            return
        yield i * 2


def then_minus_one(n):
    yield from evens(n)
    yield -1


def loads(a):
    yield nl.load(a)


@nki.jit
def kernel(a: nt.tensor[128, 512], issue=False):
    assert list(evens(5)) == [0, 2, 4]
    assert sum(v for v in evens(2)) == 2
    assert [v for v in then_minus_one(2)] == [0, 2, -1]
    if issue:
        for t in loads(a):
            pass
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
"""


def test_generators_give_the_values_they_yield_in_0_7(tmp_path):
    path = write(tmp_path, GENERATORS)
    assert nkic.check(path, nki="0.7") == []
    # a body issuing instructions would run ahead of its consumer: refused, not reordered
    (d,) = nkic.check(path, nki="0.7", issue=True)
    assert d.code == "err_unsupported_syntax" and "generator 'loads' issues" in d.message
    assert d.loc.line - FIRST + 1 == 13  # the generator function
    assert {d.code for d in nkic.check(path, nki="0.6")} == {"err_unsupported_syntax"}


ITERATORS = """def squares(n):
    for i in range(n):
        yield i * i


@nki.jit
def kernel(a: nt.tensor[128, 512], case=0):
    it = iter([1, 2, 3])
    assert next(it) == 1 and iter(it) is it
    assert list(it) == [2, 3] and next(it, None) is None
    g = squares(4)
    assert next(g) == 0 and next(g) == 1 and list(g) == [4, 9]
    assert next((d for d in a.shape if d > 128), -1) == 512
    pairs = []
    z = zip([1, 2, 3, 4], "abcd")
    for x in z:
        pairs.append((x, next(z)))  # the loop and next() share the iterator
    assert pairs == [((1, "a"), (2, "b")), ((3, "c"), (4, "d"))]
    m = map(lambda v: v + 1, [1, 2, 3])
    assert 3 in m and list(m) == [4]  # `in` consumes up to the match
    try:
        next(iter(()))
        reached = True
    except StopIteration:
        reached = False
    assert not reached
    if case == 1:
        next(squares(0))
    if case == 2:
        next([1, 2])
    if case == 3:
        len(squares(2))
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
"""


def test_iter_and_next_follow_python_iterators(tmp_path):
    """Generators, generator expressions, `iter()`, `map`, `zip`, ... are iterators: `next()`
    and `for` consume them one item at a time, exhaustion raises StopIteration (catchable),
    and a list is not an iterator."""
    path = write(tmp_path, ITERATORS)
    assert nkic.check(path, nki="0.7") == []
    lines = ITERATORS.splitlines()
    for case, code, text, line in [
        (1, "err_raised_exception", "StopIteration: next() on an exhausted generator", "next(squares(0))"),
        (2, "err_type_error", "'list' object is not an iterator", "next([1, 2])"),
        (3, "err_type_error", "generator", "len(squares(2))"),
    ]:  # fmt: skip
        (d,) = nkic.check(path, nki="0.7", case=case)
        assert d.code == code and text in d.message, d.message
        assert d.loc.line - FIRST + 1 == lines.index(f"        {line}") + 1


GLOBALS = """COUNT = 0


def bump():
    global COUNT
    COUNT += 1
    return COUNT


def counter():
    n = 0

    def step():
        nonlocal n
        n += 10
        return n

    return step


@nki.jit
def k(a):
    step = counter()
    step()
    total = bump() + bump() + step()
    for i in nl.affine_range(4):
        bump()
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(total * 100 + COUNT))
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def test_global_and_nonlocal_bind_where_python_binds_them_in_0_7(tmp_path):
    """total = 1 + 2 + 20, and COUNT is 6 after the loop's four calls (a loop whose body
    changes a global runs unrolled, once per iteration, as Python runs it)."""
    path = write(tmp_path, GLOBALS)
    a = np.ones((128, 64), np.float32)
    np.testing.assert_array_equal(nkic.compile(path, a, nki="0.7")(a), a * 2306)
    # before 0.7 the kernel language has neither statement
    diags = nkic.check(path, a=a, nki="0.6")
    assert [(d.code, d.loc.line - FIRST + 1) for d in diags] == [
        ("err_unsupported_syntax", 14),
        ("err_unsupported_syntax", 5),
    ]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("    global COUNT\n", "    COUNT = 3\n    global COUNT\n", "assigned to before global"),
        ("        nonlocal n\n", "        nonlocal m\n", "no binding for nonlocal 'm' found"),
    ],
)
def test_global_and_nonlocal_misuse_is_a_syntax_error(tmp_path, old, new, message):
    path = write(tmp_path, GLOBALS.replace(old, new))
    diags = nkic.check(path, a=np.ones((128, 64), np.float32), nki="0.7")
    (d,) = [d for d in diags if d.severity == "error"]
    assert d.code == "err_syntax_error" and message in d.message, d.message


NESTED_NONLOCAL = """def outer():
    n = 1

    def middle():
        nonlocal n

        def inner():
            nonlocal n
            n += 2
            return n

        return inner()

    middle()
    return n


@nki.jit
def k(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=float(outer()))
    nisa.dma_copy(dst=out, src=t)
    return out
"""


def test_a_nonlocal_of_a_nonlocal_reaches_the_function_that_binds_it(tmp_path):
    a = np.ones((128, 64), np.float32)
    k = nkic.compile(write(tmp_path, NESTED_NONLOCAL), a, nki="0.7")
    np.testing.assert_array_equal(k(a), a * 3)  # outer's n: 1 + 2


SHARED_HELPER = """def copy(dst, src):
    for i in nl.affine_range(1):
        nisa.dma_copy(dst=dst, src=src)


@nki.jit
def first(a: nt.tensor[128, 512]):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    copy(out, a)
    return out


@nki.jit
def second(a: nt.tensor[128, 512]):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    copy(out, a)
    return out
"""


def test_a_helper_two_kernels_reach_reports_its_problem_once_per_file(tmp_path):
    path = str(write(tmp_path, SHARED_HELPER))
    per_kernel = [check_file(path, name, nki="0.7") for name in ("first", "second")]
    assert [summary(d) for d in per_kernel] == [[("nkic_deprecated_api", "warning", 2, 14)]] * 2
    assert summary(check_file(path, nki="0.7")) == [("nkic_deprecated_api", "warning", 2, 14)]
