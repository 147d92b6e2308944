"""nkic: an ahead-of-time compiler for NKI kernels and a cycle-approximate NeuronCore simulator."""

__version__ = "0.1.0"  # the single source: pyproject.toml reads it

from . import standin as _standin
from . import standin_beta1 as _standin_beta1

_standin.install()
_standin_beta1.install()

_PUBLIC = {
    "CompiledKernel": "api",
    "compile": "api",
    "load": "api",
    "check": "api",
    "SimulationWarning": "api",
    "NonFiniteWarning": "api",
    "CompileError": "diagnostics",
    "NeffError": "api",
    "RunError": "api",
    "RuntimeFault": "api",
    "Diagnostic": "diagnostics",
    "TensorSpec": "frontend",
    "ArgExpr": "frontend",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    # Imported lazily so that `import nkic.ir` or the CLI's --help stay cheap.
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    raise AttributeError(f"module 'nkic' has no attribute {name!r}")
