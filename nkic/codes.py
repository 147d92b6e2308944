"""The catalogue of every diagnostic code nkic emits: title, explanation and a bad/good kernel.

`docs/diagnostics.md` is generated from this table (`python -m nkic.tools.gen_diagnostics_doc`)
and `nkic explain CODE` prints one entry. Each example is a complete NKI 0.3.0 kernel file
after the imports in `EXAMPLE_IMPORTS`, and tests/diagnostics/test_catalogue_examples.py
checks every one with `nkic.check`:

* `bad` reports its code and no other error or warning; the primary location is the line
  marked `# <- CODE` (at the line's first non-blank column) or the line above a comment
  `#   ^ CODE` (at the column of the caret). A bad example without a marker is reported at the
  top of the file (line 1, column 1).
* `good` reports nothing at all.
* A first line `# nkic check kernel.py [-k NAME] [--arg NAME=SPEC]... [--target T] [--nki V]`
  gives the command line the example is checked with (default: no `-k`, no `--arg`, target trn2).

Codes no kernel file can produce by itself are listed, with the reason, in the test's
`EXEMPT` table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CodeInfo:
    """One diagnostic code. `stage` names the part of nkic that reports it."""

    code: str
    title: str
    stage: str
    severity: str
    explanation: str
    bad: str
    good: str


EXAMPLE_IMPORTS = (
    "import nki\nimport nki.isa as nisa\nimport nki.language as nl\nimport nki.typing as nt\n"
)
"""What every catalogue example assumes at the top of the file."""

STAGES = {
    "frontend": "Frontend (parsing and specialisation)",
    "checks": "Semantic checks",
    "bounds": "Static bounds",
    "allocation": "SBUF/PSUM allocation",
    "internal": "Internal",
}

_ENTRIES: list[CodeInfo] = []


def _code(
    code: str,
    title: str,
    stage: str,
    explanation: str,
    bad: str,
    good: str,
    severity: str = "error",
):
    _ENTRIES.append(
        CodeInfo(
            code,
            title,
            stage,
            severity,
            " ".join(explanation.split()),
            bad.strip("\n"),
            good.strip("\n"),
        )
    )


# ---------------------------------------------------------------------------------------------
# frontend

_code(
    "err_unsupported_syntax",
    "Python construct outside the NKI subset",
    "frontend",
    """Kernels are specialised by nkic's own interpreter, which accepts the NKI subset of
    Python: literals, tuples, lists, dicts with string keys, NKIObject classes, enums,
    functions, if/for/while. Anything else (e.g. `try`, generators, set literals, `*` in a
    kernel signature, and before NKI 0.7 `is` other than against None) is rejected instead of
    being run by Python.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    dtypes = {nl.float32, nl.bfloat16}
    #        ^ err_unsupported_syntax
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    dtypes = [nl.float32, nl.bfloat16]
""",
)
_code(
    "err_undefined_name",
    "Name not defined",
    "frontend",
    """A name used in the kernel is neither a local variable, a parameter, a module-level
    constant nor an imported module.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=b)
    #                        ^ err_undefined_name
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
""",
)
_code(
    "err_unknown_api",
    "Unknown or removed NKI API",
    "frontend",
    """The attribute does not exist in `nki.language` / `nki.isa` of NKI 0.3.0 (it may be a
    typo or a Beta 1 API that was removed, such as `nl.load` in the `nki.*` namespace or
    `nl.arange`).""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_cpy(dst=t, src=a)  # <- err_unknown_api
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
""",
)
_code(
    "err_unexpected_keyword",
    "Keyword argument not in the API signature",
    "frontend",
    """Since NKI 0.2.0 unknown keyword arguments are errors rather than being silently
    ignored. Check the spelling and the 0.3.0 signature of the call.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, val=0.0)
    #                  ^ err_unexpected_keyword
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0)
""",
)
_code(
    "err_missing_argument",
    "Required argument missing",
    "frontend",
    """An NKI API or a helper function was called without one of its required arguments.
    `nki.isa` calls take the destination as their first argument `dst`.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t)  # <- err_missing_argument
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0)
""",
)
_code(
    "err_assert_failed",
    "Compile-time assertion failed",
    "frontend",
    """An `assert` in the kernel (or a helper) evaluated to False during specialisation. The
    message of the assert, if any, is shown. As in Python, the kernel ends there: nothing after
    the assert is specialised or reported, so a guard such as `assert P <= 128` is not followed
    by the errors it guards against. Inside a loop the message names the first failing
    iteration.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 500]):  # called with 500 columns
    assert a.shape[1] % 128 == 0, "columns must be a multiple of 128"  # <- err_assert_failed
    for j in nl.affine_range(a.shape[1] // 128):
        t = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[:, j * 128:(j + 1) * 128])
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):  # called with 512 columns
    assert a.shape[1] % 128 == 0, "columns must be a multiple of 128"
    for j in nl.affine_range(a.shape[1] // 128):
        t = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[:, j * 128:(j + 1) * 128])
""",
)
_code(
    "err_ambiguous_tensor_truth_value",
    "Truth value of a tensor is ambiguous",
    "frontend",
    """`if t:`, `and`, `or` and `not` need one compile-time boolean; a tensor holds many runtime
    values. Compare shapes or compile-time values instead, or select elementwise on the
    device. This is the rule of the NKI 0.3–0.6 kernel subset; NKI 0.7 traces the kernel as
    Python, where a tensor is always true (`nkic_tensor_truth_is_object`).""",
    """# nkic check kernel.py --nki 0.6
@nki.jit
def kernel(a: nt.tensor[128, 512], b: nt.tensor[128, 512]):
    src = b or a
    #     ^ err_ambiguous_tensor_truth_value
    t = nl.load(src)
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512], b: nt.tensor[128, 512]):
    src = b if b is not None else a
    t = nl.load(src)
""",
)
_code(
    "nkic_tensor_truth_is_object",
    "A tensor as a truth value is always true (NKI 0.7)",
    "frontend",
    """NKI 0.7 specialises a kernel by running it as Python, and a tensor is a Python object
    without `__bool__`: `if t:`, `t and x`, `t or x`, `not t` and `assert t` test the object,
    which is always true, never the tensor's values. nkic follows that and warns, because such
    a condition usually means "was this tensor given" (`t is not None`, which says so) or was
    meant to look at the data, which only instructions on the device can do. Under
    `--nki 0.3` to `0.6` the same code is `err_ambiguous_tensor_truth_value` (or, as an `if`
    condition, `err_dynamic_control_flow_not_supported`).""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512], bias: nt.tensor[128, 512]):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    src = bias if bias else a
    #             ^ nkic_tensor_truth_is_object
    nisa.dma_copy(dst=out, src=src)
    return out
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512], bias: nt.tensor[128, 512]):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    src = bias if bias is not None else a
    nisa.dma_copy(dst=out, src=src)
    return out
""",
    severity="warning",
)
_code(
    "err_nki_api_outside_of_nki_kernel",
    "NKI API used outside a kernel",
    "frontend",
    """`nki.language` / `nki.isa` calls only have a meaning while a `@nki.jit` kernel is being
    specialised; calling them at module level or from plain Python code is an error.""",
    """
buf = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
#     ^ err_nki_api_outside_of_nki_kernel

@nki.jit
def kernel(a: nt.tensor[128, 512]):
    nisa.dma_copy(dst=buf, src=a)
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    buf = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=buf, src=a)
""",
)
_code(
    "err_dynamic_control_flow_not_supported",
    "Control flow on a runtime tensor value",
    "frontend",
    """`if` and `while` conditions are evaluated at compile time (or on a register in a
    dynamic loop). A condition that depends on tensor data cannot decide the program's
    shape; use a predicated instruction (`nisa.tensor_copy_predicated`,
    `nisa.select_reduce`) instead. In NKI 0.7, which traces the kernel as Python, a tensor
    as a condition is a Python object and always true (`nkic_tensor_truth_is_object`); a
    register or NkiScalar as a condition stays this error.""",
    """# nkic check kernel.py --nki 0.6
@nki.jit
def kernel(a: nt.tensor[128, 512], flag: nt.tensor[1, 1, nl.int32]):
    f = nl.load(flag)
    if f:
    #  ^ err_dynamic_control_flow_not_supported
        t = nl.load(a)
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512], flag=True):  # a compile-time argument
    if flag:
        t = nl.load(a)
""",
)
_code(
    "err_dynamic_loop_bound",
    "Dynamic loop bound that the hardware loop cannot take",
    "frontend",
    """The bounds of `nl.fori_loop` and `nl.dynamic_range` are compared by a 32-bit
    compare-and-branch on the engine sequencers: an integer bound must fit in a signed 32-bit
    register, and the step must be a positive compile-time integer (the hardware loop encodes
    it as an immediate), never a register.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    def body(i):
        pass

    step = nisa.register_alloc(2)
    nl.fori_loop(0, 64, body, step=step)
    #                         ^ err_dynamic_loop_bound
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    def body(i):
        pass

    nl.fori_loop(0, 64, body, step=2)
""",
)
_code(
    "err_write_to_loop_register",
    "Write to a dynamic loop's induction variable",
    "frontend",
    """The induction variable of `nl.fori_loop` and `nl.dynamic_range` is a read-only register
    (frozen since NKI 0.4): the loop itself advances it. Copy it into a register of your own
    with `nisa.register_move` to compute with it.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    def body(i):
        nisa.register_move(i, 0)
        #                  ^ err_write_to_loop_register

    nl.fori_loop(0, 4, body)
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    def body(i):
        j = nisa.register_alloc()
        nisa.register_move(j, i)

    nl.fori_loop(0, 4, body)
""",
)
_code(
    "err_int64_scalar_operator",
    "Comparison or unsupported operator on an int64 NkiScalar",
    "frontend",
    """An `nl.int64` NkiScalar (NKI 0.7, `nisa.scalar_load` of an int64 tensor) supports only
    `+`, `-` and `*`, traced into 64-bit register arithmetic; comparisons on int64 are
    rejected at compile time (NKI 0.7 `NkiScalar` reference).""",
    """
@nki.jit
def kernel(n: nt.tensor[1, 1, nl.int64]):
    s = nisa.scalar_load(n)
    if s < 4:
    #  ^ err_int64_scalar_operator
        pass
""",
    """
@nki.jit
def kernel(n: nt.tensor[1, 1, nl.int64]):
    out = nl.ndarray((1, 1), nl.int64, buffer=nl.shared_hbm)
    s = nisa.scalar_load(n)
    nisa.scalar_store(out, s * 2 + 1)
    return out
""",
)
_code(
    "err_int64_operand",
    "int64 tensor given to a compute instruction",
    "checks",
    """`nl.int64` exists for NkiScalar values (NKI 0.7): `nisa.scalar_load`,
    `nisa.scalar_store` and DMA move it; compute instructions reject it.""",
    """
@nki.jit
def kernel(n: nt.tensor[1, 1, nl.int64]):
    t = nl.ndarray((1, 1), nl.int64, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=n)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1)
#   ^ err_int64_operand
""",
    """
@nki.jit
def kernel(n: nt.tensor[1, 1, nl.int32]):
    t = nl.ndarray((1, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=n)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1)
""",
)
_code(
    "err_local_variable_used_out_of_scope",
    "Tensor used outside the block that created it",
    "frontend",
    """A tile allocated inside an `nl.affine_range` body (each iteration gets its own buffer)
    is used after the loop. The iterations of an affine loop are independent and may run in any
    order or overlap, so no iteration's tile is "the last one". Allocate the tile before the
    loop when its value must survive it. (Loops written with `range`, `nl.static_range` or
    `nl.sequential_range` follow Python: after the loop the name holds the last iteration's
    tile.) Beta 1 (`neuronxcc.nki`) scopes tensors more strictly: every `if` / `else` / `for`
    block is the scope of the tensors it defines, so a name bound inside the block to a tensor
    created there (`tmp = nl.load(a)` in a branch, `data = data + t` in any loop) cannot be
    read after the block. Create the tensor before the block and write it inside with
    `tmp[...] = ...`.""",
    """
@nki.jit
def kernel(a: nt.tensor[4, 128, 512]):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[i])
    nisa.dma_copy(dst=out, src=t)
    #                          ^ err_local_variable_used_out_of_scope
    return out
""",
    """
@nki.jit
def kernel(a: nt.tensor[4, 128, 512]):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(4):
        nisa.dma_copy(dst=t, src=a[i])
    nisa.dma_copy(dst=out, src=t)
    return out
""",
)
_code(
    "nkic_shadowing_local_tensor",
    "A block rebinds a tensor's name to a new tensor (Beta 1)",
    "frontend",
    """Beta 1 only. Inside an `if` / `else` / `for` block, `data = data + t` does not update the
    tensor `data` held before the block: it binds the name to a new tensor whose scope is the
    block, and reading `data` after the block is `err_local_variable_used_out_of_scope`. Beta 1
    warned here ("shadowing local tensor ... with a new object"); so does nkic. Write
    `data[...] = data + t` to update the existing tensor. (The example is written in Beta 1,
    `neuronxcc.nki`, which `nkic check` selects by the file's imports.)""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    data = nl.zeros((128, 512), dtype=nl.float32)
    for i in nl.sequential_range(4):
        data = data + nl.load(a)  # <- nkic_shadowing_local_tensor
        nl.store(out, value=data)
    return out
""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    data = nl.zeros((128, 512), dtype=nl.float32)
    for i in nl.sequential_range(4):
        data[...] = data + nl.load(a)
    nl.store(out, value=data)
    return out
""",
    severity="warning",
)
_code(
    "err_control_flow_condition_depending_on_arange",
    "Branch on an index grid (Beta 1)",
    "frontend",
    """Beta 1 only. An `nl.arange` / `nl.mgrid` index grid, an expression of grids or a
    comparison of one stands for every index of a tile at once, so it has no truth value: an
    `if`, `while` or conditional expression on it cannot choose a branch. To restrict an
    operation to some indices, pass the comparison as `mask=` of the call; to branch per loop
    iteration, test the loop variable. (The example is written in Beta 1, `neuronxcc.nki`,
    which `nkic check` selects by the file's imports.)""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:512]
    t = nl.load(a[i_p, i_f])
    if i_p < 64:  # <- err_control_flow_condition_depending_on_arange
        t = nl.exp(t)
    nl.store(out[i_p, i_f], value=t)
    return out
""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:512]
    t = nl.load(a[i_p, i_f])
    nl.store(out[i_p, i_f], value=nl.exp(t), mask=(i_p < 64))
    return out
""",
)
_code(
    "err_unsupported_mixing_basic_advanced_tensor_indexing",
    "Slices and index grids in one index (Beta 1)",
    "frontend",
    """Beta 1 only. A tensor index either slices every dimension (basic indexing,
    `t[0:128, 0:512]`) or indexes every one with `nl.arange` / `nl.mgrid` grids and
    expressions of them (advanced indexing, `t[i_p, i_f]`); Beta 1 rejected an index mixing
    the two, and so does nkic. (The example is written in Beta 1, `neuronxcc.nki`, which
    `nkic check` selects by the file's imports.)""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_f = nl.arange(512)[None, :]
    t = nl.load(a[0:128, i_f])  # <- err_unsupported_mixing_basic_advanced_tensor_indexing
    nl.store(out, value=t)
    return out
""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:512]
    t = nl.load(a[i_p, i_f])
    nl.store(out[i_p, i_f], value=t)
    return out
""",
)
_code(
    "err_failed_to_infer_tile_from_local_tensor",
    "Tensor with block dimensions passed where a tile is expected (Beta 1)",
    "frontend",
    """Beta 1 only. The inputs of compute APIs (`nl` compute functions, `nisa` instructions,
    tile operators) are tiles: their first dimension is the partition dimension. A tensor
    created with block dimensions in front of `nl.par_dim` (`(4, nl.par_dim(128), 512)`) is a
    collection of tiles, not one; index a block to get its tile (`t[i]`). Current NKI has no
    block dimensions. (The example is written in Beta 1, `neuronxcc.nki`, which `nkic check`
    selects by the file's imports.)""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray((4, 128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.zeros((4, nl.par_dim(128), 512), dtype=a.dtype, buffer=nl.sbuf)
    c = nl.add(t, 32.0)  # <- err_failed_to_infer_tile_from_local_tensor
    return out
""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray((4, 128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.zeros((4, nl.par_dim(128), 512), dtype=a.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        c = nl.add(t[i], 32.0)
        nl.store(out[i], value=c)
    return out
""",
)
_code(
    "err_1d_arange_not_supported",
    "Tensor indexed with a one-dimensional nl.arange (Beta 1)",
    "frontend",
    """Beta 1 only. An index grid places its axis in a grid of the rank of the tile it selects
    (at least two dimensions, as SBUF and PSUM have a partition dimension and free ones):
    `nl.arange(n)[:, None]` for the partition dimension, `nl.arange(n)[None, :]` for a free
    one. A bare `nl.arange(n)` has one dimension and cannot index a tensor. Current NKI has no
    index grids (slice the tensor). (The example is written in Beta 1, `neuronxcc.nki`, which
    `nkic check` selects by the file's imports.)""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.arange(128)
    t = nl.load(a[i, 0])  # <- err_1d_arange_not_supported
    nl.store(out, value=t)
    return out
""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.arange(128)[:, None]
    t = nl.load(a[i, 0])
    nl.store(out, value=t)
    return out
""",
)
_code(
    "err_indirect_indices_free_dim",
    "Runtime indices on a free dimension of a load or store (Beta 1)",
    "frontend",
    """Beta 1 only. A load or store may index a tensor with a tile of runtime indices
    (`a[idx[i_p, 0], i_f]` gathers the rows `idx` names) on the partition (first) dimension
    only; runtime indices on another dimension are not a DMA access pattern. Index the rows,
    transposing the tensor if the indices select its columns. Current NKI writes gathers with
    `.ap(vector_offset=...)`. (The example is written in Beta 1, `neuronxcc.nki`, which
    `nkic check` selects by the file's imports.)""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray((128, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    idx = nisa.memset((128, 1), 3, dtype=nl.int32)
    t = nl.load(a[i_p, idx[i_p, 0]])  # <- err_indirect_indices_free_dim
    nl.store(out, value=t)
    return out
""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(512)[None, :]
    idx = nisa.memset((128, 1), 3, dtype=nl.int32)
    t = nl.load(a[idx[i_p, 0], i_f])
    nl.store(out, value=t)
    return out
""",
)
_code(
    "err_cannot_assign_to_index",
    "Item assignment to an index grid or a mask (Beta 1)",
    "frontend",
    """Beta 1 only. An `nl.arange` / `nl.mgrid` index grid, an affine expression of grids and a
    mask predicate stand for index values, not for a tile: `x[0, 5] = 1024` cannot change one
    of them. Make a tile of the index values with `nisa.iota` and assign to the tile. Current
    NKI has no index grids. (The example is written in Beta 1, `neuronxcc.nki`, which
    `nkic check` selects by the file's imports.)""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray((1, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    _, x = nl.mgrid[0:1, 0:8]
    x[0, 5] = 1024  # <- err_cannot_assign_to_index
    y = nisa.iota(x, dtype=nl.uint32)
    nl.store(out, value=y)
    return out
""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def kernel(a):
    out = nl.ndarray((1, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    _, x = nl.mgrid[0:1, 0:8]
    y = nisa.iota(x, dtype=nl.uint32)
    y[0, 5] = 1024
    nl.store(out, value=y)
    return out
""",
)
_code(
    "err_nested_kernel_with_spmd_grid",
    "Kernel launched on a grid from inside a kernel (Beta 1)",
    "frontend",
    """Beta 1 only. A kernel's SPMD grid (`kernel[2, 2](a)`) is given where the host launches
    it; a kernel cannot launch another one on a grid. Inside a kernel, loop over the indices
    the grid would have given and call a helper function (without `@nki.jit`) that takes
    them as arguments. (The example is written in Beta 1, `neuronxcc.nki`, which
    `nkic check` selects by the file's imports.)""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
@nki.jit
def add_one(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), 1.0))
    return out

@nki.jit
def kernel(a):
    return add_one[2](a)  # <- err_nested_kernel_with_spmd_grid
""",
    """
# Beta 1 (import neuronxcc.nki.language as nl)
def add_one(a, out):
    nl.store(out, value=nl.add(nl.load(a), 1.0))

@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    add_one(a, out)
    return out
""",
)
_code(
    "err_annotation_shape_mismatch",
    "Argument does not match its `nki.typing` annotation",
    "frontend",
    """A kernel parameter annotated with `nt.tensor[shape, dtype]` was given an argument of a
    different shape or dtype (via `--arg` or the Python API).""",
    """
# nkic check kernel.py --arg a=float32[128,256]
@nki.jit
def kernel(a: nt.tensor[128, 512]):
#          ^ err_annotation_shape_mismatch
    t = nl.load(a)
""",
    """
# nkic check kernel.py --arg a=float32[128,512]
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.load(a)
""",
)

_code(
    "err_syntax_error",
    "Python syntax error",
    "frontend",
    """The file is not valid Python, so no kernel in it can be read. The location is the one
    Python's parser reports.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512])
#                                 ^ err_syntax_error
    t = nl.load(a)
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.load(a)
""",
)
_code(
    "err_file_not_found",
    "Kernel file cannot be read",
    "frontend",
    """The kernel file does not exist or cannot be read. The Python API (`nkic.check`,
    `nkic.compile`) reports it at line 1 of the path; on the command line a FILE that does
    not exist is a usage error (exit status 2) before any checking starts.""",
    """
# nkic check kernels/matmull.py
""",
    """
# nkic check kernels/matmul.py
""",
)
_code(
    "err_kernel_not_found",
    "No such kernel in the file",
    "frontend",
    """`-k` names a function the file does not define (any top-level function may be named,
    decorated with `@nki.jit` or not), or `nkic compile` without `-k` finds no `@nki.jit`
    kernel or several of them. (`nkic check` without `-k` checks every kernel in the file; a
    file without kernels, such as a helper module, is clean.) The location is the top of the
    file.""",
    """
# nkic check kernel.py -k add_kernel
@nki.jit
def add(a: nt.tensor[128, 512], b: nt.tensor[128, 512]):
    a_t = nl.load(a)
""",
    """
# nkic check kernel.py -k add
@nki.jit
def add(a: nt.tensor[128, 512], b: nt.tensor[128, 512]):
    a_t = nl.load(a)
""",
)
_code(
    "err_nested_kernel_call",
    "Kernel called from a kernel",
    "frontend",
    """The NKI documentation says a function decorated with `@nki.jit` cannot be called from
    inside another kernel, but the NKI Library relies on it: nkic inlines the called kernel
    like a helper function and warns. Remove the decorator from the sub-kernel (decorate at
    the call site, `nki.jit(fn)`, where it is also launched on its own) to silence it.""",
    """
@nki.jit
def copy_tile(dst, src):
    nisa.dma_copy(dst=dst, src=src)

@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    copy_tile(t, a)  # <- err_nested_kernel_call
""",
    """
def copy_tile(dst, src):
    nisa.dma_copy(dst=dst, src=src)

@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    copy_tile(t, a)
""",
    severity="warning",
)
_code(
    "err_output_not_shared_hbm",
    "Returned tensor is not in shared HBM",
    "frontend",
    """Since NKI 0.3.0 the tensors a kernel returns must be allocated with
    `buffer=nl.shared_hbm`; `nl.hbm` (private) or on-chip tensors cannot be outputs.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
    #      ^ err_output_not_shared_hbm
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
""",
)
_code(
    "err_unsupported_api",
    "NKI API not supported by nkic",
    "frontend",
    """The API exists in NKI but nkic cannot compile it (yet), or NKI 0.3.0 documents it as
    unsupported on hardware: e.g. `nl.dynamic_range`, `nl.fmod`, or `nl.matmul` without
    `transpose_x=True` (which would need an implicit transpose). The message names the
    `nki.isa` instructions or `nl` calls to use instead.""",
    """
@nki.jit
def kernel(x: nt.tensor[128, 128, nl.bfloat16], w: nt.tensor[128, 512, nl.bfloat16]):
    x_t = nl.load(x)  # (M, K)
    w_t = nl.load(w)  # (K, N)
    y = nl.matmul(x_t, w_t)
    #   ^ err_unsupported_api
""",
    """
@nki.jit
def kernel(xT: nt.tensor[128, 128, nl.bfloat16], w: nt.tensor[128, 512, nl.bfloat16]):
    xT_t = nl.load(xT)  # (K, M): x transposed
    w_t = nl.load(w)  # (K, N)
    y = nl.matmul(xT_t, w_t, transpose_x=True)
""",
)
_code(
    "nkic_deprecated_api",
    "API deprecated in the selected NKI version",
    "frontend",
    """The kernel uses a name that the selected NKI version (`--nki`, default 0.7) deprecates:
    it still works, but a later version may remove it. The message names the version that
    deprecated it and the hint its replacement (docs/language.md, "NKI versions").""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    n = nl.tile_size.psum_fmax
    #   ^ nkic_deprecated_api
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    n = nl.tile_size.psum_bank_fmax
""",
    severity="warning",
)
_code(
    "nkic_removed_keyword",
    "`dtype=` on an `nki.isa` call that writes a dst tile",
    "frontend",
    """NKI 0.2.0 removed `dtype=` from `nki.isa` calls: the instruction writes its `dst` tile,
    whose dtype is the result's dtype. Current NKI still accepts the keyword, so nkic warns and
    uses the dst tile's dtype. A `dtype=` that names another dtype than the dst tile's would not
    mean what it says: that is `err_invalid_argument`; allocate `dst` with the dtype you want
    and the instruction converts to it.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t, dtype=nl.float32)
    #                              ^ nkic_removed_keyword
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t)
""",
    severity="warning",
)
_code(
    "nkic_kernel_not_checked",
    "A kernel form nkic does not check",
    "frontend",
    """`nkic check` finds the kernels of a file by their `@nki.jit` decorator (also through an
    alias such as `from nki import jit as j` or `jit = nki.jit`) or by a call-site wrapper
    (`nki.jit(f)`, `nki.jit(mode=...)(f)`), and torch-neuronx's `@nki_jit` (which is `nki.jit`).
    In a current-NKI file, a function that another form from an NKI package marks as a kernel
    (`@nki.baremetal`, `@nki.benchmark(...)`, ...) is not checked, and this error says so rather than
    reporting the file clean. Decorate the kernel with `@nki.jit`, or name it with `-k` to check
    it. (A Beta 1 file, importing only `neuronxcc.nki`, has all of these as kernel forms.)""",
    """
@nki.baremetal
def kernel(a: nt.tensor[128, 512]):
#   ^ nkic_kernel_not_checked
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
""",
)
_code(
    "nkic_device_print_ignored",
    "`nl.device_print` is not simulated",
    "frontend",
    """On hardware `nl.device_print` dumps a tensor through the runtime's debug stream. nkic
    checks its arguments but emits no instruction for it, so nothing is printed when the
    kernel runs on the simulator. Return the tensor from the kernel to look at its values, or
    use `print()` for compile-time values.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.load(a)
    nl.device_print("t", t)  # <- nkic_device_print_ignored
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.load(a)
    print("t shape:", t.shape)  # at compile time
""",
    severity="warning",
)
_code(
    "nkic_shapes_unknown",
    "Kernel not specialised: parameter shapes unknown",
    "frontend",
    """`nkic check` specialises each kernel for its argument shapes to run the checks that need
    them (shapes, dtypes, memory, bounds, races, allocation). When a tensor parameter has
    neither an `--arg` nor an `nki.typing` annotation, the kernel still gets every
    shape-independent check (the language subset, names, known APIs and their keywords) over
    its body and the helper functions it reaches, and this note lists the parameters without
    shapes and the checks that were skipped.""",
    """
# nkic check kernel.py
@nki.jit
def add(a, b):
#   ^ nkic_shapes_unknown
    a_t = nl.load(a)
""",
    """
# nkic check kernel.py
@nki.jit
def add(a: nt.tensor[128, 512], b: nt.tensor[128, 512]):  # or --arg a=float32[128,512] ...
    a_t = nl.load(a)
""",
    severity="note",
)
_code(
    "err_import_error",
    "Import cannot be resolved",
    "frontend",
    """The kernel uses a module nkic cannot read: helper modules are searched next to the
    kernel file, in its package and on `sys.path`, and relative imports must stay inside the
    package. Other modules (`torch`, installed packages, modules not found) may be imported
    for host code in the same file, but using one in kernel code is this error, reported at
    the use.""",
    """
import tile_helpers  # no tile_helpers.py next to the kernel

@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = tile_helpers.load_tile(a)
    #   ^ err_import_error
""",
    """
def load_tile(src):  # or put tile_helpers.py next to the kernel
    return nl.load(src)

@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = load_tile(a)
""",
)
_code(
    "err_attribute_error",
    "No such attribute",
    "frontend",
    """The object or module has no attribute of that name (the message suggests close
    matches).""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    n = a.shpe[0]
    #   ^ err_attribute_error
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    n = a.shape[0]
""",
)
_code(
    "err_type_error",
    "Wrong type of value or argument",
    "frontend",
    """A compile-time operation or call got a value of the wrong type: too many positional
    arguments, an argument given twice, a string where a number is needed, a class that does
    not derive from `nl.NKIObject`, a non-string dict key, an integer where a `nisa` enum
    member is required, ...""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.memset(t, 0.0, nisa.engine.vector, "x", 1)  # <- err_type_error
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0, engine=nisa.engine.vector)
""",
)
_code(
    "err_value_error",
    "Invalid compile-time value",
    "frontend",
    """A compile-time value is of the right type but unusable: unpacking into the wrong number
    of names, a missing dict key, an index past the end of a tuple, a division by zero, ...""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    rows, cols, depth = a.shape  # <- err_value_error
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    rows, cols = a.shape
""",
)
_code(
    "err_tensor_operator",
    "Python operator applied to a tensor",
    "frontend",
    """NKI 0.3.0 tensors do not overload `+`, `*`, `+=`, comparisons and the like; compute with
    an `nki.isa` instruction into a destination tile.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512], b: nt.tensor[128, 512]):
    a_t = nl.load(a)
    b_t = nl.load(b)
    c = a_t + b_t
    #   ^ err_tensor_operator
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512], b: nt.tensor[128, 512]):
    a_t = nl.load(a)
    b_t = nl.load(b)
    c = nl.ndarray(a_t.shape, a_t.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=c, data1=a_t, data2=b_t, op=nl.add)
""",
)
_code(
    "err_invalid_index",
    "Malformed tensor index",
    "frontend",
    """A tensor index has more entries than the tensor has dimensions, several ellipses, or an
    entry that is neither an int, a slice nor `...`.""",
    """
@nki.jit
def kernel():
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t[0:128, 0:256, 0], value=0.0)
    #               ^ err_invalid_index
""",
    """
@nki.jit
def kernel():
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t[0:128, 0:256], value=0.0)
""",
)
_code(
    "err_raised_exception",
    "Kernel raised an exception",
    "frontend",
    """A `raise` statement was executed during specialisation; its message is shown. Kernels use
    `raise` (or `assert`) to reject arguments they do not support. As in Python, the kernel
    ends there: nothing after it is specialised or reported.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512], act="tanh"):
    if act not in ("relu", "gelu"):
        raise ValueError(f"unsupported activation {act}")  # <- err_raised_exception
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512], act="gelu"):
    if act not in ("relu", "gelu"):
        raise ValueError(f"unsupported activation {act}")
""",
)
_code(
    "err_specialisation_limit",
    "Specialisation does not terminate in reasonable time",
    "frontend",
    """Specialisation unrolled more loop iterations, or nested helper calls more deeply, than nkic
    allows. `range`/`static_range` loops always unroll, while `nl.affine_range` and
    `nl.sequential_range` loops stay hardware loops as long as the body does not need the
    induction variable as a Python int. Recursion needs a compile-time base case. A kernel has
    two loop budgets: 200,000 unrolled iterations that build instructions or allocations (they
    bound the size of the program), and 1,000,000 iterations of any kind (most of them
    compile-time Python that builds nothing, as in helpers walking the dimensions of a view;
    they bound the time specialisation takes). The message names the budget, the loop and how
    many iterations it ran. Once a budget is spent, specialisation of the kernel stops there, so
    nothing after it is reported, and the later cores of an LNC launch are not specialised.""",
    """
def tiles(n):
    return tiles(n - 1) + 1
    #      ^ err_specialisation_limit

@nki.jit
def kernel(a: nt.tensor[128, 512]):
    n = tiles(a.shape[1] // 128)
""",
    """
def tiles(n):
    return 0 if n == 0 else tiles(n - 1) + 1

@nki.jit
def kernel(a: nt.tensor[128, 512]):
    n = tiles(a.shape[1] // 128)
""",
)
_code(
    "err_invalid_view",
    "Invalid tensor view",
    "frontend",
    """A view (`reshape`, `view(dtype)`, `.ap()`, slicing, `permute`, ...) cannot be built: a
    reshape changes the element count or the partition dimension of an on-chip tensor, a
    strided view is reshaped without a copy, the partition dimension is strided, a dtype
    reinterpretation does not divide the last dimension, or the arguments are malformed.""",
    """
@nki.jit
def kernel():
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    v = t.reshape((64, 1024))
    #   ^ err_invalid_view
""",
    """
@nki.jit
def kernel():
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    v = t.reshape((128, 2, 256))
""",
)

# ---------------------------------------------------------------------------------------------
# semantic checks: operands

_code(
    "err_num_partition_exceed_arch_limit",
    "More than 128 partitions",
    "checks",
    """SBUF and PSUM have 128 partitions; an on-chip tile (dimension 0 of an SBUF/PSUM tensor)
    and every operand of an instruction span at most 128 of them (`nl.tile_size.pmax`).
    Process larger data in blocks of 128 rows.""",
    """
@nki.jit
def kernel(a: nt.tensor[256, 512]):
    t = nl.ndarray((256, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)  # <- err_num_partition_exceed_arch_limit
""",
    """
@nki.jit
def kernel(a: nt.tensor[256, 512]):
    for r in nl.affine_range(2):
        t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[r * 128:(r + 1) * 128, :])
""",
)
_code(
    "err_num_partition_mismatch",
    "Operands span different numbers of partitions",
    "checks",
    """Element-wise instructions process each partition on its own lane, so every tile operand
    (and `dst`) spans the same number of partitions. For `nc_matmul` both operands hold the
    contraction dimension K on their partitions and `dst` has M partitions.""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    y = nl.zeros((64, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=x, data1=x, data2=y, op=nl.add)  # <- err_num_partition_mismatch
""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    y = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=x, data1=x, data2=y, op=nl.add)
""",
)
_code(
    "err_shape_mismatch",
    "Operand shapes do not fit the instruction",
    "checks",
    """The elements per partition of the operands differ where the instruction requires them
    to match (there is no implicit broadcasting), a per-partition scalar operand is not a
    `(P, 1)` vector, or a destination does not have the shape the instruction produces.""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    s = nl.zeros((128, 4), nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=x, data=x, op0=nl.multiply, operand0=s)  # <- err_shape_mismatch
""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    s = nl.zeros((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=x, data=x, op0=nl.multiply, operand0=s)
""",
)
_code(
    "err_dtype_mismatch",
    "Operand dtype not allowed",
    "checks",
    """An operand has a dtype the instruction does not accept: e.g. `nc_matmul` inputs must be
    fp8/bf16/fp16/tf32/fp32 with fp32 PSUM output (bf16 too on trn3), bitwise operators need
    integer tiles, transposes and gathers do not convert, and `memset` needs an integer value
    for an integer tile (a whole float such as `0.0` is the integer it equals).""",
    """
@nki.jit
def kernel():
    t = nl.ndarray((128, 512), nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.5)  # <- err_dtype_mismatch
""",
    """
@nki.jit
def kernel():
    t = nl.ndarray((128, 512), nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0)
""",
)
_code(
    "err_unsupported_memory",
    "Operand in a buffer the instruction cannot access",
    "checks",
    """Each engine reaches only some memories: the Tensor engine reads SBUF and writes PSUM,
    GpSimd cannot access PSUM, DMA moves between HBM and SBUF (not PSUM, since 0.3.0),
    compute instructions never touch HBM, and some instructions cannot read two PSUM
    operands at once.""",
    """
@nki.jit
def kernel():
    a_sb = nl.zeros((128, 128), nl.bfloat16, buffer=nl.sbuf)
    b_ps = nl.zeros((128, 512), nl.bfloat16, buffer=nl.psum)
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=out, stationary=a_sb, moving=b_ps)  # <- err_unsupported_memory
""",
    """
@nki.jit
def kernel():
    a_sb = nl.zeros((128, 128), nl.bfloat16, buffer=nl.sbuf)
    b_sb = nl.zeros((128, 512), nl.bfloat16, buffer=nl.sbuf)
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=out, stationary=a_sb, moving=b_sb)
""",
)
_code(
    "err_size_of_dimension_exceed_arch_limit",
    "A dimension exceeds the instruction's limit",
    "checks",
    """Some instructions bound a free size: `nc_matmul` takes at most 128 stationary columns (M)
    and 512 moving columns (N, one PSUM bank of fp32; more on trn3), TensorE transposes
    128x128 and VectorE 32x32 blocks, `bn_stats` reads at most 512 elements per partition.""",
    """
@nki.jit
def kernel():
    a = nl.zeros((128, 128), nl.bfloat16, buffer=nl.sbuf)
    b = nl.zeros((128, 1024), nl.bfloat16, buffer=nl.sbuf)
    p = nl.ndarray((128, 1024), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=a, moving=b)  # <- err_size_of_dimension_exceed_arch_limit
""",
    """
@nki.jit
def kernel():
    a = nl.zeros((128, 128), nl.bfloat16, buffer=nl.sbuf)
    b = nl.zeros((128, 1024), nl.bfloat16, buffer=nl.sbuf)
    for n in nl.affine_range(2):
        p = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=p, stationary=a, moving=b[:, n * 512:(n + 1) * 512])
""",
)
_code(
    "err_exceed_max_supported_dimension",
    "Too many dimensions",
    "checks",
    """An operand has more dimensions than the instruction supports: on-chip access patterns
    have one partition and at most four free dimensions; `iota`/`affine_select` patterns have
    at most four levels.""",
    """
@nki.jit
def kernel():
    t = nl.ndarray((128, 2, 2, 2, 2, 8), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0)  # <- err_exceed_max_supported_dimension
""",
    """
@nki.jit
def kernel():
    t = nl.ndarray((128, 2, 2, 2, 16), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=t, value=0.0)
""",
)
_code(
    "err_unsupported_on_target",
    "Instruction or option not available on the target",
    "checks",
    """The instruction (or one of its options) exists only on newer NeuronCores. The message
    names the minimum target: e.g. `quantize_mx`, `nc_matmul_mx`, `activate2` and
    `exponential` need trn3; `range_select`, `dge_mode=hwdge`, `perf_mode=double_row`,
    ScalarE `tensor_copy` and a scalar activation bias need trn2.""",
    """
# nkic check kernel.py --target trn2
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.bfloat16, buffer=nl.sbuf)
    q = nl.ndarray((128, 128), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    s = nl.ndarray((128, 16), nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=q, src=x, dst_scale=s)  # <- err_unsupported_on_target
""",
    """
# nkic check kernel.py --target trn3
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.bfloat16, buffer=nl.sbuf)
    q = nl.ndarray((128, 128), nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    s = nl.ndarray((128, 16), nl.uint8, buffer=nl.sbuf)
    nisa.quantize_mx(dst=q, src=x, dst_scale=s)
""",
)
_code(
    "err_unsupported_engine",
    "Engine not allowed for the instruction",
    "checks",
    """`engine=` names an engine that cannot execute the instruction (e.g. `tensor_tensor` runs
    on Vector or GpSimd, `activation` on Scalar only; bitwise `tensor_scalar` runs on
    Vector only; a DMA is triggered by the sync or scalar queue).""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    y = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=x, data1=x, data2=y, op=nl.add, engine=nisa.engine.scalar)
#   ^ err_unsupported_engine
""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    y = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=x, data1=x, data2=y, op=nl.add, engine=nisa.engine.vector)
""",
)
_code(
    "err_unsupported_operator",
    "ALU operator or activation not allowed here",
    "checks",
    """The `op`/`op0`/`op1`/`reduce_op` argument is not one the instruction supports: e.g.
    `tensor_reduce` needs a reduction operator, `activation` accumulates only with
    `nl.add`, `tensor_scalar` cannot mix a bitwise with an arithmetic operator.""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    r = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=r, op=nl.greater, data=x, axis=1)  # <- err_unsupported_operator
""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    r = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=r, op=nl.maximum, data=x, axis=1)
""",
)
_code(
    "err_invalid_argument",
    "Argument value not allowed",
    "checks",
    """A compile-time argument of an NKI API call has a value the API rejects: a reduction
    axis that is not the trailing free dimensions, `op1` without `operand1`, `tile_position`
    without `tile_size`, an unsupported transpose `axes` permutation, a non-boolean flag, ...""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 4, 64), nl.float32, buffer=nl.sbuf)
    r = nl.ndarray((128, 64), nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=r, op=nl.add, data=x, axis=1)  # <- err_invalid_argument
""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 4, 64), nl.float32, buffer=nl.sbuf)
    r = nl.ndarray((128, 4), nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=r, op=nl.add, data=x, axis=2)
""",
)
_code(
    "err_activation_bias_invalid_type",
    "Activation bias is not a float (P, 1) vector",
    "checks",
    """`nisa.activation` adds `bias` per partition: it must be a `(P, 1)` tile of float32,
    float16 or bfloat16 (a compile-time scalar bias is accepted on trn2 and newer).""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    y = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    b = nl.zeros((128, 1), nl.int32, buffer=nl.sbuf)
    nisa.activation(dst=y, op=nl.exp, data=x, bias=b)  # <- err_activation_bias_invalid_type
""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    y = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    b = nl.zeros((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=y, op=nl.exp, data=x, bias=b)
""",
)
_code(
    "err_activation_scale_invalid_type",
    "Activation scale is not float32",
    "checks",
    """`scale` multiplies the input before the activation function: it is a compile-time number
    or a float32 `(P, 1)` tile.""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    y = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    s = nl.zeros((128, 1), nl.bfloat16, buffer=nl.sbuf)
    nisa.activation(dst=y, op=nl.exp, data=x, scale=s)  # <- err_activation_scale_invalid_type
""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    y = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    s = nl.zeros((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=y, op=nl.exp, data=x, scale=s)
""",
)
_code(
    "err_activation_scale_scalar_or_vector",
    "Activation scale is neither a scalar nor a (P, 1) vector",
    "checks",
    """A tile `scale` supplies one factor per partition, so it must have the input's partition
    count and a single element per partition.""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    y = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    s = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=y, op=nl.exp, data=x, scale=s)  # <- err_activation_scale_scalar_or_vector
""",
    """
@nki.jit
def kernel():
    x = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    y = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    s = nl.zeros((128, 1), nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=y, op=nl.exp, data=x, scale=s)
""",
)
_code(
    "err_store_dst_shape_smaller_than_other_shape",
    "Copy destination smaller than its source",
    "checks",
    """A copy (`tensor_copy`, `dma_copy`) writes every source element; its destination must be
    at least as large as the source, otherwise data would be dropped silently.""",
    """
@nki.jit
def kernel():
    src = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    dst = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=dst, src=src)  # <- err_store_dst_shape_smaller_than_other_shape
""",
    """
@nki.jit
def kernel():
    src = nl.zeros((128, 512), nl.float32, buffer=nl.sbuf)
    dst = nl.ndarray((128, 256), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=dst, src=src[:, 0:256])
""",
)

# ---------------------------------------------------------------------------------------------
# semantic checks: dataflow, interface and races

_code(
    "err_read_before_write",
    "On-chip tensor read before it is written",
    "checks",
    """`nl.ndarray` memory is uninitialised (the simulator fills it with NaN). A read is only
    satisfied by a write earlier in program order, or by a write later in the body of a loop
    that ran in an earlier iteration (unless the tile is allocated inside that loop, which
    gives every iteration a fresh, uninitialised buffer). A read that earlier writes cover only
    in part is this error when the instruction writes device memory (HBM), else the
    `nkic_partly_uninitialised_read` warning.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 4, 512]):
    x = nl.load(a)
    acc = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(4):
        nisa.tensor_tensor(dst=acc, data1=acc, data2=x[:, i, :], op=nl.add)
#       ^ err_read_before_write
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 4, 512]):
    x = nl.load(a)
    acc = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in nl.sequential_range(4):
        nisa.tensor_tensor(dst=acc, data1=acc, data2=x[:, i, :], op=nl.add)
""",
)
_code(
    "nkic_partly_uninitialised_read",
    "On-chip tensor read where earlier writes cover only a part",
    "checks",
    """Earlier writes cover part of the region an instruction reads; the rest holds whatever
    the memory held before (NaN in the simulator). That is valid when nothing uses what the
    instruction computes from the unwritten part: an instruction whose lanes are independent
    (a transpose, `nisa.nonzero_with_count` on GpSimd, which reads partitions 0, 16, ..., 112)
    leaves garbage only where the kernel never looks. nkic does not follow where the results go
    on chip, so it warns; a read of which nothing was written, or a partly written region copied
    to device memory (HBM), is `err_read_before_write`.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    x = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=x[0:64, :], src=a[0:64, :])
    y = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=y, src=x)
#   ^ nkic_partly_uninitialised_read
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    x = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=x[0:64, :], src=a[0:64, :])
    y = nl.ndarray((64, 512), nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=y, src=x[0:64, :])
""",
    severity="warning",
)
_code(
    "err_psum_accumulate_uninitialized",
    "Matmul accumulates into unwritten PSUM",
    "checks",
    """`nc_matmul(accumulate=True)` adds to what the PSUM location holds; the first matmul of an
    accumulation group must overwrite (`accumulate=False`, or leave `accumulate=None` so the
    compiler decides). Accumulating onto uninitialised PSUM is undefined behaviour.""",
    """
@nki.jit
def kernel():
    a = nl.zeros((128, 4, 128), nl.bfloat16, buffer=nl.sbuf)
    b = nl.zeros((128, 4, 512), nl.bfloat16, buffer=nl.sbuf)
    p = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(4):
        nisa.nc_matmul(dst=p, stationary=a[:, k, :], moving=b[:, k, :], accumulate=True)
#       ^ err_psum_accumulate_uninitialized
""",
    """
@nki.jit
def kernel():
    a = nl.zeros((128, 4, 128), nl.bfloat16, buffer=nl.sbuf)
    b = nl.zeros((128, 4, 512), nl.bfloat16, buffer=nl.sbuf)
    p = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(4):
        nisa.nc_matmul(dst=p, stationary=a[:, k, :], moving=b[:, k, :])
""",
)
_code(
    "err_tensor_output_not_written_to",
    "Returned tensor never written",
    "checks",
    """A tensor the kernel returns is never the destination of any instruction (perhaps the
    loop that writes it has zero iterations), so the caller would receive garbage.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    #     ^ err_tensor_output_not_written_to
    return out
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
""",
)
_code(
    "err_cannot_update_immutable_parameter",
    "Kernel writes an input it does not return",
    "checks",
    """NKI 0.3.0 lets a kernel write its HBM arguments (output-as-argument style), so nkic
    reports this as a warning: writing an input that is not returned is usually a wrong
    destination or a forgotten `return`. Return the parameter, or write a new
    `nl.shared_hbm` output.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=a, src=t)  # <- err_cannot_update_immutable_parameter
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=out, src=t)
    return out
""",
    severity="warning",
)
_code(
    "err_shared_hbm_must_in_kernel_level",
    "Shared HBM tensor allocated inside a loop",
    "checks",
    """`nl.shared_hbm` tensors are visible to every core of the logical NeuronCore and must be
    created once, at the top level of the kernel. Allocate them before the loop and index
    them inside it. Every NKI version: not inside a loop. Beta 1 (`neuronxcc.nki`) also: not
    under an `if` / `else` and not in a function the kernel calls; allocate the tensor in
    the kernel and write it there or pass it to the helper.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.load(a)
    for i in nl.affine_range(4):
        out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
        #     ^ err_shared_hbm_must_in_kernel_level
        nisa.dma_copy(dst=out, src=t)
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.load(a)
    out = nl.ndarray((4, 128, 512), nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        nisa.dma_copy(dst=out[i], src=t)
    return out
""",
)
_code(
    "err_unexpected_output_dependencies",
    "Iterations of an affine_range loop touch the same data",
    "checks",
    """`nl.affine_range` promises that iterations are independent. Two iterations writing (or
    one writing and one reading) the same location break that promise. From NKI 0.3 on an
    `affine_range` loop runs its iterations in order (it is a plain loop), so the kernel
    computes the sequential result and this is a warning about the broken promise; in Beta 1,
    where the compiler may reorder or overlap the iterations, it is an error. Index the data
    with the loop variable, allocate the tile inside the loop, or use `nl.sequential_range`.
    Matmul accumulation into PSUM over the loop variable is an allowed reduction. Loops the
    compiler had to unroll (because the body uses the loop variable at compile time, e.g.
    `if i == 0:`) are checked too.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.load(a)
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        nisa.dma_copy(dst=out[:, 0:128], src=t[:, i * 128:(i + 1) * 128])
#       ^ err_unexpected_output_dependencies
    return out
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    t = nl.load(a)
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        nisa.dma_copy(dst=out[:, i * 128:(i + 1) * 128], src=t[:, i * 128:(i + 1) * 128])
    return out
""",
    severity="warning",
)

# ---------------------------------------------------------------------------------------------
# bounds and allocation

_code(
    "err_tensor_access_out_of_bound",
    "Static out-of-bounds access",
    "bounds",
    """An index, slice or access pattern reaches outside the tensor for some iteration of its
    loops (checked with interval arithmetic on the loop variables).""",
    """
@nki.jit
def kernel():
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(5):
        nisa.memset(dst=t[:, i * 128:(i + 1) * 128], value=0.0)  # <- err_tensor_access_out_of_bound
""",
    """
@nki.jit
def kernel():
    t = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        nisa.memset(dst=t[:, i * 128:(i + 1) * 128], value=0.0)
""",
)
_code(
    "err_sbuf_capacity_exceeded",
    "SBUF tiles do not fit",
    "allocation",
    """The tiles live at the same time need more bytes per partition than the SBUF of the
    target provides. Use smaller tiles, fewer buffers, or end tile lifetimes earlier
    (allocate tiles inside the loop that uses them).""",
    """
@nki.jit
def kernel():
    big = nl.ndarray((128, 65536), nl.float32, buffer=nl.sbuf)  # 256 KiB per partition
    #     ^ err_sbuf_capacity_exceeded
    nisa.memset(dst=big, value=0.0)
""",
    """
@nki.jit
def kernel():
    for c in nl.affine_range(16):
        chunk = nl.ndarray((128, 4096), nl.float32, buffer=nl.sbuf)  # 16 KiB per partition
        nisa.memset(dst=chunk, value=0.0)
""",
)
_code(
    "nkic_psum_spill",
    "PSUM tiles spilled to HBM",
    "allocation",
    """More PSUM tiles are live at once than PSUM holds (8 banks of 2 KiB per partition), even
    with each tile read out as soon as it is final, because their readers also need something
    computed after all of them (a row maximum over every score tile, a tile set after the last
    matmul). As the Neuron compiler does when live data overflows an on-chip memory, nkic then
    spills: right after its last write, a tile is copied to SBUF and stored to a private HBM
    scratch tensor, and each later instruction that reads it reads a copy reloaded into SBUF
    just before it. Only PSUM tensors allocated at the kernel's top level and used by top-level
    instructions (unrolled loops included), written whole by one instruction, read only after
    their last write and not at a fixed address, are spilled, longest wait first and as few as
    make PSUM fit; the results are exactly the same, and the copies cost DMA time, which the
    profile shows. The warning says how many bytes went to HBM. Read each tile out before computing the next ones (or compute
    what depends on all of them from SBUF copies) to avoid the traffic.""",
    """
# nkic check kernel.py --arg x=float32[128,128] --arg w=float32[128,4608]
@nki.jit
def kernel(x, w):
    xs = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xs, src=x)
    ws = nl.ndarray(w.shape, w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=ws, src=w)
    tiles = []
    for i in range(9):
        p = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
        #   ^ nkic_psum_spill
        nisa.nc_matmul(dst=p, stationary=xs, moving=ws[:, i * 512:(i + 1) * 512])
        tiles.append(p)
    ones = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.memset(ones, value=1.0)  # set after the last matmul: all 9 tiles wait for it
    res = nl.ndarray((128, 9 * 512), nl.float32, buffer=nl.sbuf)
    for i in range(9):
        nisa.tensor_tensor(dst=res[:, i * 512:(i + 1) * 512], data1=tiles[i], data2=ones, op=nl.add)
    out = nl.ndarray(res.shape, res.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
""",
    """
# nkic check kernel.py --arg x=float32[128,128] --arg w=float32[128,4608]
@nki.jit
def kernel(x, w):
    xs = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xs, src=x)
    ws = nl.ndarray(w.shape, w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=ws, src=w)
    ones = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf)
    nisa.memset(ones, value=1.0)  # set first: each tile is read out right after its matmul
    res = nl.ndarray((128, 9 * 512), nl.float32, buffer=nl.sbuf)
    for i in range(9):
        p = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=p, stationary=xs, moving=ws[:, i * 512:(i + 1) * 512])
        nisa.tensor_tensor(dst=res[:, i * 512:(i + 1) * 512], data1=p, data2=ones, op=nl.add)
    out = nl.ndarray(res.shape, res.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
""",
    severity="warning",
)
_code(
    "err_psum_capacity_exceeded",
    "PSUM tiles do not fit",
    "allocation",
    """PSUM has 8 banks of 2 KiB per partition (16 KiB). The PSUM tiles live at the same time
    need more than that, even with each tile read out as soon as it is final (nkic moves an
    instruction that reads a tile's final value up to the tile's last write, past everything it
    does not depend on, when program order does not fit). Copy results to SBUF earlier or use
    fewer accumulators.""",
    """
@nki.jit
def kernel():
    acc = nl.ndarray((128, 4608), nl.float32, buffer=nl.psum)  # 18 KiB per partition
    #     ^ err_psum_capacity_exceeded
    nisa.memset(dst=acc, value=0.0)
""",
    """
@nki.jit
def kernel():
    acc = nl.ndarray((128, 4096), nl.float32, buffer=nl.psum)  # 16 KiB: all 8 banks
    nisa.memset(dst=acc, value=0.0)
""",
)
_code(
    "err_psum_bank_violation",
    "Matmul output crosses a PSUM bank boundary",
    "allocation",
    """A matmul accumulates inside one 2 KiB PSUM bank (512 fp32 per partition): the region
    one instruction writes may not straddle two banks.""",
    """
@nki.jit
def kernel():
    a = nl.zeros((128, 128), nl.bfloat16, buffer=nl.sbuf)
    b = nl.zeros((128, 512), nl.bfloat16, buffer=nl.sbuf)
    p = nl.ndarray((128, 1024), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p[:, 256:768], stationary=a, moving=b)  # <- err_psum_bank_violation
""",
    """
@nki.jit
def kernel():
    a = nl.zeros((128, 128), nl.bfloat16, buffer=nl.sbuf)
    b = nl.zeros((128, 512), nl.bfloat16, buffer=nl.sbuf)
    p = nl.ndarray((128, 1024), nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p[:, 512:1024], stationary=a, moving=b)
""",
)
_code(
    "nkic_partition_window",
    "Tile placed at an illegal start partition",
    "allocation",
    """An engine reaches partitions in aligned windows: a tile of more than 64 partitions starts
    at partition 0, one of 33..64 at 0 or 64, one of at most 32 at 0, 32, 64 or 96. An
    `address=` placement breaks that rule, and so does a compute-instruction operand that slices
    the partitions of a tile off the window (`t[8:16]`, `t[32:96]`); DMA reaches any
    partition.""",
    """
@nki.jit
def kernel():
    t = nl.ndarray((64, 512), nl.float32, buffer=nl.sbuf, address=(32, 0))
    #   ^ nkic_partition_window
    nisa.memset(dst=t, value=0.0)
""",
    """
@nki.jit
def kernel():
    t = nl.ndarray((64, 512), nl.float32, buffer=nl.sbuf, address=(64, 0))
    nisa.memset(dst=t, value=0.0)
""",
)
_code(
    "nkic_tensor_indirection",
    "Tensor indirection outside what the instruction allows",
    "checks",
    """A tensor-indirection view (`t.indirect(index, num_elem)`, NKI 0.5, trn3) is accepted only
    on the operands each instruction documents: `dst` and the main input of `tensor_copy`
    (`src`), `tensor_copy_predicated` (`predicate`), `tensor_tensor` (`data1`), `tensor_scalar`,
    `tensor_scalar_reduce`, `tensor_reduce`, `activation`, `activation_reduce`, `activate2`
    (`data`), `tensor_scalar_cumulative`, `exponential` (`src`), and `stationary`/`moving` of
    `nc_matmul` and `nc_matmul_mx` (with their scales, indexed alike). Also reported: an
    indirect `moving` with `is_transpose=True`, a `tile_position` other than (0, 0), an
    indirect matmul input that is not a Tensor-engine float dtype, a scattered PSUM `dst` on the
    Scalar engine, more offsets than the engine's snake order finds in the index tile (groups
    of 16 partitions, 32 on the Tensor engine), and operands that break the start-partition
    rules (every index on a quadrant boundary; a gathered input on its index's partitions; a
    scattered `dst`'s index on the main input's partitions): nkic starts automatically placed
    operands of such an instruction at partition 0, so views (`t[32:64]`) and `address=`
    placements decide.""",
    """
# nkic check kernel.py --target trn3
@nki.jit
def kernel():
    t = nl.zeros((128, 64), nl.float32, buffer=nl.sbuf)
    y = nl.zeros((128, 16), nl.float32, buffer=nl.sbuf)
    ix = nl.zeros((128, 1), nl.int32, buffer=nl.sbuf)
    o = nl.ndarray((128, 16), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=o, data1=y, data2=t.indirect(ix, num_elem=16), op=nl.add)
#   ^ nkic_tensor_indirection
""",
    """
# nkic check kernel.py --target trn3
@nki.jit
def kernel():
    t = nl.zeros((128, 64), nl.float32, buffer=nl.sbuf)
    y = nl.zeros((128, 16), nl.float32, buffer=nl.sbuf)
    ix = nl.zeros((128, 1), nl.int32, buffer=nl.sbuf)
    o = nl.ndarray((128, 16), nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=o, data1=t.indirect(ix, num_elem=16), data2=y, op=nl.add)
""",
)
_code(
    "nkic_psum_bank_align",
    "PSUM tile not at a bank boundary",
    "allocation",
    """Explicitly placed PSUM tensors must start at the beginning of a 2 KiB bank.""",
    """
@nki.jit
def kernel():
    p = nl.ndarray((128, 256), nl.float32, buffer=nl.psum, address=(0, 1024))
    #   ^ nkic_psum_bank_align
    nisa.memset(dst=p, value=0.0)
""",
    """
@nki.jit
def kernel():
    p = nl.ndarray((128, 256), nl.float32, buffer=nl.psum, address=(0, 2048))
    nisa.memset(dst=p, value=0.0)
""",
)
_code(
    "nkic_address_conflict",
    "Placed tensors overlap while both are live",
    "allocation",
    """Two tensors given explicit `address=` placements share bytes while both hold live data.
    Move one of them or shorten a lifetime.""",
    """
@nki.jit
def kernel():
    x = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf, address=(0, 0))
    y = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf, address=(0, 1024))
    #   ^ nkic_address_conflict
    nisa.memset(dst=x, value=0.0)
    nisa.memset(dst=y, value=1.0)
    nisa.tensor_tensor(dst=x, data1=x, data2=y, op=nl.add)
""",
    """
@nki.jit
def kernel():
    x = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf, address=(0, 0))
    y = nl.ndarray((128, 512), nl.float32, buffer=nl.sbuf, address=(0, 2048))
    nisa.memset(dst=x, value=0.0)
    nisa.memset(dst=y, value=1.0)
    nisa.tensor_tensor(dst=x, data1=x, data2=y, op=nl.add)
""",
)

# ---------------------------------------------------------------------------------------------
# LNC launches (two physical cores)

_code(
    "nkic_lnc_degree",
    "LNC degree not available or inconsistent",
    "checks",
    """A launch's logical-core (LNC) degree is 1 or 2, and 2 exists on trn2 and trn3 only
    (two physical cores sharing one HBM). The bracket of `kernel[n]` is that degree: one
    integer, equal to the degree the kernel is compiled for (`--lnc`, `lnc=`); since NKI
    0.7 the compiler rejects a mismatch. Source:
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/get-started/about/lnc.html""",
    """# nkic check kernel.py --target trn1 --lnc 2
@nki.jit
def kernel(a: nt.tensor[128, 512]):
#   ^ nkic_lnc_degree
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    return out
""",
    """# nkic check kernel.py --target trn2 --lnc 2
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    half = 512 // nl.num_programs()
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[:, core * half:(core + 1) * half], src=a[:, core * half:(core + 1) * half])
    return out
""",
)
_code(
    "nkic_lnc_shared_hbm_read_race",
    "One core reads shared HBM bytes the other core writes",
    "checks",
    """Under LNC=2 both physical cores share the kernel's inputs, outputs and `nl.shared_hbm`
    tensors, and nothing orders one core's DMAs against the other's. When one core reads bytes
    that the other core writes, with no `nisa.core_barrier` (or collective both cores run)
    between them, the read sees the old or the new value depending on timing. A read of bytes
    the reading core wrote itself earlier is left to `nkic_lnc_shared_hbm_race`. The
    diagnostic names the read, the write and the elements and bytes they share.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    half = 512 // nl.num_programs()
    core = nl.program_id()
    other = (core + 1) % nl.num_programs()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[:, core * half:(core + 1) * half], src=a[:, core * half:(core + 1) * half])
    t = nl.ndarray((128, half), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=out[:, other * half:(other + 1) * half])
#   ^ nkic_lnc_shared_hbm_read_race
    return out
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    half = 512 // nl.num_programs()
    core = nl.program_id()
    other = (core + 1) % nl.num_programs()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[:, core * half:(core + 1) * half], src=a[:, core * half:(core + 1) * half])
    nisa.core_barrier(data=out, cores=(0, 1))
    t = nl.ndarray((128, half), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=out[:, other * half:(other + 1) * half])
    return out
""",
)
_code(
    "nkic_lnc_shared_hbm_race",
    "Two cores write the same shared HBM bytes",
    "checks",
    """Under LNC=2 both physical cores run the kernel and share its inputs, its outputs and
    every `nl.shared_hbm` tensor. When both cores write overlapping bytes of such a tensor
    and nothing orders the writes, the value left there depends on which DMA lands last.
    Each core should write its own part, selected with `nl.program_id()`. The diagnostic
    names both writes and the elements and bytes they share.""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    half = 512 // nl.num_programs()
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[:, 0:half], src=a[:, core * half:(core + 1) * half])
#   ^ nkic_lnc_shared_hbm_race
    return out
""",
    """
@nki.jit
def kernel(a: nt.tensor[128, 512]):
    half = 512 // nl.num_programs()
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[:, core * half:(core + 1) * half], src=a[:, core * half:(core + 1) * half])
    return out
""",
)
_code(
    "nkic_lnc_divergent_control_flow",
    "The cores of an LNC launch run different loops",
    "checks",
    """The hardware requires both physical cores of an LNC=2 launch to run the same control
    flow: a compiled loop is a basic block on each core, and loops whose number or trip
    count depend on `nl.program_id()` make the cores diverge (the Neuron compiler reports
    it as `NCC_IXGM002`, or the cores wait on each other forever). Keep the loops the same
    and select each core's share of the data by index arithmetic. Source:
    https://github.com/aws-neuron/aws-neuron-sdk/issues/1388""",
    """
@nki.jit
def kernel(a: nt.tensor[512, 128]):
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for i in nl.sequential_range(1 + core):
#   ^ nkic_lnc_divergent_control_flow
        t = nl.ndarray((128, 128), a.dtype, buffer=nl.sbuf)
        rows = core * 256 + i * 128
        nisa.dma_copy(dst=t, src=a[rows:rows + 128, :])
        nisa.dma_copy(dst=out[rows:rows + 128, :], src=t)
    return out
""",
    """
@nki.jit
def kernel(a: nt.tensor[512, 128]):
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for i in nl.sequential_range(2):
        t = nl.ndarray((128, 128), a.dtype, buffer=nl.sbuf)
        rows = (core * 2 + i) * 128
        nisa.dma_copy(dst=t, src=a[rows:rows + 128, :])
        nisa.dma_copy(dst=out[rows:rows + 128, :], src=t)
    return out
""",
)

_code(
    "nkic_collective_prepare_slot",
    "A split variable-size collective's prepare without exactly one trigger",
    "checks",
    """NKI 0.7 splits `ncc.all_to_all_v` and `ncc.all_gather_v` into a prepare (the metadata
    setup) and a trigger (the data movement). Prepares share a single slot: each prepare must
    be followed by exactly one trigger of the instruction it returned, with no other prepare
    in between; the hardware rejects an intervening prepare. nkic also needs the prepare and
    its trigger in the same loop body, so that every execution of the prepare meets one
    trigger. Sources:
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.collectives.all_to_all_v_prepare.html
    and https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.collectives.all_gather_v_prepare.html""",
    """# nkic check kernel.py --arg a=float32[2,64] --arg meta=uint32[3,2]
import nki.collectives as ncc


@nki.jit
def kernel(a, meta):
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    group = ncc.ReplicaGroup([[0, 1]])
    first = ncc.all_gather_v_prepare(srcs=[a[core]], dsts=[out[core]], replica_group=group,
                                     metadata_tensor=meta, recv_counts_known=True)
    second = ncc.all_to_all_v_prepare(srcs=[a[core]], dsts=[out[core]], replica_group=group,
#            ^ nkic_collective_prepare_slot
                                      metadata_tensor=meta, recv_counts_known=True)
    ncc.all_gather_v_trigger(first)
    ncc.all_to_all_v_trigger(second)
    return out
""",
    """# nkic check kernel.py --arg a=float32[2,64] --arg meta=uint32[3,2]
import nki.collectives as ncc


@nki.jit
def kernel(a, meta):
    core = nl.program_id()
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    group = ncc.ReplicaGroup([[0, 1]])
    first = ncc.all_gather_v_prepare(srcs=[a[core]], dsts=[out[core]], replica_group=group,
                                     metadata_tensor=meta, recv_counts_known=True)
    ncc.all_gather_v_trigger(first)
    second = ncc.all_to_all_v_prepare(srcs=[a[core]], dsts=[out[core]], replica_group=group,
                                      metadata_tensor=meta, recv_counts_known=True)
    ncc.all_to_all_v_trigger(second)
    return out
""",
)

# ---------------------------------------------------------------------------------------------
# HBM addresses

_code(
    "nkic_hbm_offset_overflow",
    "HBM element offset past 2^31 in 32-bit address arithmetic",
    "allocation",
    """An access moves more than 2^31 - 1 elements into an HBM tensor (or into the buffer a
    view argument lies in) where the offset is computed in 32 bits: the part a compiled loop
    adds to the access's base address (the induction variable lives in a 32-bit engine
    register), or a dynamic `scalar_offset` / `vector_offset` index (int32; NKI 0.7 adds
    int64 scalar offsets to reach past 4 GB). The address wraps and the DMA reads or writes
    the wrong bytes, or faults. A constant base, folded by the compiler, is not affected:
    an outer `nl.static_range` loop moves the large part of the offset there. Sources:
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.isa.NkiScalar.html,
    https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/api/generated/nki.language.fori_loop.html""",
    """# nkic check kernel.py --arg a=bfloat16[262144,16384]
@nki.jit
def kernel(a):
    out = nl.ndarray((128, 512), a.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for i in nl.sequential_range(2048):
        t = nl.ndarray((128, 512), a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[i * 128:(i + 1) * 128, 0:512])
    #   ^ nkic_hbm_offset_overflow
        nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
""",
    """# nkic check kernel.py --arg a=bfloat16[262144,16384]
@nki.jit
def kernel(a):
    out = nl.ndarray((128, 512), a.dtype, buffer=nl.shared_hbm)
    acc = nl.ndarray((128, 512), a.dtype, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for block in nl.static_range(16):
        for i in nl.sequential_range(128):
            row = block * 16384 + i * 128
            t = nl.ndarray((128, 512), a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a[row:row + 128, 0:512])
            nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    nisa.dma_copy(dst=out, src=acc)
    return out
""",
)
_code(
    "nkic_view_access",
    "Access of a view argument nkic cannot map onto its buffer",
    "allocation",
    """A tensor argument given as a view into a larger HBM buffer (`--arg
    a=view(dtype[...], shape=..., offset=..., strides=...)`, or a strided numpy array in
    `nkic.compile`) is accessed with a pattern nkic cannot express over the buffer: an
    access-pattern entry that runs across dimensions of the view (e.g. a reshape that
    flattens rows), a dtype reinterpretation, or a dynamic offset. Access the view one
    dimension per pattern entry (slices and indices), or pass a contiguous array.""",
    """# nkic check kernel.py --arg "a=view(float32[1024,1024], shape=(256,512), strides=(1024,1))"
@nki.jit
def kernel(a):
    out = nl.ndarray((128, 1024), a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 1024), a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a.reshape((128, 1024)))
#   ^ nkic_view_access
    nisa.dma_copy(dst=out, src=t)
    return out
""",
    """# nkic check kernel.py --arg "a=view(float32[1024,1024], shape=(256,512), strides=(1024,1))"
@nki.jit
def kernel(a):
    out = nl.ndarray((256, 512), a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        t = nl.ndarray((128, 512), a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[i * 128:(i + 1) * 128, :])
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=t)
    return out
""",
)

# ---------------------------------------------------------------------------------------------
# nkic migrate

_code(
    "nkic_migrate_manual_step",
    "A Beta 1 construct `nkic migrate` leaves to you",
    "frontend",
    """`nkic migrate` rewrites a Beta 1 (`neuronxcc.nki`) kernel into current NKI. What it cannot
    rewrite without guessing (a `mask=` other than comparisons of an index grid with a bound,
    index grids that transpose a tensor or feed an instruction such as `nisa.iota`, index
    expressions that are not `start + step * grid`, ...) stays as it was under a
    `# TODO(nkic migrate): ...` comment, and this warning names the line and the manual step.
    `nkic check` of the migrated file reports the Beta 1 names left there. The example shows
    the Beta 1 line and what to write instead.""",
    """
# a Beta 1 kernel, migrated: the equality mask stays
@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    # TODO(nkic migrate): mask= has no current equivalent: slice the operands ...
    t = nl.load(a[i_p, i_f], mask=(i_p == 3))
    nl.store(out[i_p, i_f], value=t)
    return out
""",
    """
@nki.jit
def kernel(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a[3:4, 0:64])  # the row the mask kept
    nl.store(out[3:4, 0:64], value=t)
    return out
""",
    severity="warning",
)

# ---------------------------------------------------------------------------------------------
# internal

_code(
    "nkic_internal_error",
    "Internal compiler error",
    "internal",
    """nkic failed on this kernel for a reason that is a bug in nkic, not in the kernel. Please
    report it with the kernel and the command line; the message includes the failing stage.""",
    """
# any kernel that makes nkic crash
""",
    """
# (no fix in the kernel: report the bug)
""",
)

CODES: dict[str, CodeInfo] = {c.code: c for c in _ENTRIES}
