"""A kernel package: relative imports across subpackages, a dataclass config and an enum
passed from Python."""

PARTITIONS = 128
