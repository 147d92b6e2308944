"""A kernel package: relative imports, a dataclass config and an enum argument."""

PACKAGE_TILE = 128
