"""Backend: engine assignment, queues and semaphore waits, the `.neff` writer, the listing.

`compile_kernel` (pipeline + writer) lives in `nkic.backend.driver`: importing it here would
make this package depend on the pass pipeline, which itself uses the engine assignment pass.
"""

from .asm import emit_asm
from .neff import write_neff

__all__ = ["emit_asm", "write_neff"]
