from .tiles import *  # noqa: F403
from .tiles import activation_of

__all__ = ["load_block", "store_block", "activation_of"]
