"""The specialiser: an AST interpreter for the NKI meta-programming language that evaluates
compile-time values and emits tile IR for `nki.isa` calls, allocations and symbolic loops.

One `visit_X` per accepted construct; anything else is `err_unsupported_syntax`. Errors are
`UserError`s caught per statement (reported, then the statement is skipped and the names it
would have bound are poisoned so that their later uses stay silent)."""

from __future__ import annotations

import ast

from ..ir.builder import Builder
from ..ir.core import Kernel, Loc
from . import languages, pylib
from .interp.calls import Calls, Signature
from .interp.context import Context
from .interp.expressions import Expressions
from .interp.loops import Loops
from .interp.modules import Modules
from .interp.nki_binding import NkiBinding
from .interp.objects import PythonObjects
from .interp.state import Attempt, CallSite, Frame, LoopMemo
from .interp.statements import Statements
from .language import Language
from .loader import Loader
from .values import Function, SourceModule

__all__ = ["Attempt", "CallSite", "Frame", "Specialiser"]


class Specialiser(
    Context, Statements, Loops, Expressions, Calls, PythonObjects, Modules, NkiBinding
):
    """Evaluates a kernel file for one set of arguments and builds its Kernel."""

    def __init__(
        self,
        loader: Loader,
        sink,
        target: str,
        kernel_name: str,
        unroll_all: bool = False,
        memo: LoopMemo | None = None,
        language: Language | None = None,
    ):
        self.language = language or languages.DEFAULT
        #: whether the language has its own handling of some `nl` / `nisa` calls
        self.intercepts_calls = type(self.language).intercept_call is not Language.intercept_call
        #: whether `obj[key]` on a tensor view means only what the base language says
        self.plain_subscript = type(self.language).subscript is Language.subscript
        self.plain_attribute = type(self.language).attribute is Language.attribute
        #: whether no operator or comparison has a meaning of the language's own
        self.plain_binop = type(self.language).binop is Language.binop
        #: whether `name = value` binds `value` itself
        self.plain_bind_name = type(self.language).bind_name is Language.bind_name
        self.deprecations: dict[tuple[str, str], tuple | None] = {}  # of the names looked up
        self.loader = loader
        self.sink = sink
        self.target = target
        self.kernel = Kernel(kernel_name, target)
        self.builder = Builder(self.kernel)
        self.unroll_all = unroll_all
        self.memo = memo or LoopMemo()  # loop sites that must be unrolled, and why
        self.loop_keys: dict[str, tuple] = {}  # IR loop variable -> its loop's key
        self.output: list[str] = []  # compile-time print() output, written when done
        self.frames: list[Frame] = []
        self.call_stack: list[Loc] = []
        self._spans: dict[int, tuple] = {}  # id(AST node) -> (node, file, its stackless Loc)
        self.attempts: list[Attempt] = []
        self.tensor_blocks: list = []  # Beta 1 block scopes being run (beta1_scopes.py)
        self.in_kernel = False
        self.lambda_depth = 0
        self.iterations = 0  # unrolled loop iterations (interp.state.MAX_PYTHON_ITERATIONS)
        self.emitting_iterations = 0  # ... of them that built IR (interp.state.MAX_ITERATIONS)
        self.site_iterations: dict[ast.AST, int] = {}  # ... of each loop, for the diagnostics
        #: (file, `for` node) of each unrolled range loop being run, outermost first; their
        #: current values are `builder.iteration`'s: an error's message names its iteration
        self.loop_sites: list[tuple[str, ast.For]] = []
        self.pure_cache: dict = {}  # Function -> {arguments: recorded run} (interp/pure.py)
        self.plain_loops = 0  # plain `range` loops kept as loops (loops.MAX_PLAIN_LOOPS)
        self.modules: dict[str, object] = {}
        self.module_by_file: dict[str, SourceModule] = {}
        self.builtins = pylib.python_builtins()
        self.known_modules = {**pylib.known_modules(), **self.language.modules()}
        self._visitors: dict[type, object] = {}
        self.signatures: dict[ast.arguments, Signature] = {}  # of the functions called
        self.reported_keys: set[tuple] = set()
        self.constants: list = []  # Allocs of constant tensors, placed first when done
        self.grid: tuple[int, ...] = ()  # a Beta 1 SPMD launch grid; () when there is none
        self.program: tuple[int, ...] = ()  # the grid program being specialised
        self.grid_params: dict[str, object] = {}  # parameters, shared by the grid's programs
        self.shared_seen: dict[tuple, int] = {}  # shared_hbm allocations of this program
        self.shared_tensors: dict[tuple, list] = {}  # ... and of the grid's first program
        self.host_code = 0  # > 0 while module-level code runs (see Modules.exec_host_stmt)
        self.host_errors: list = []
        self.wrapped_kernels: dict[ast.FunctionDef, Function] = {}  # by their def
