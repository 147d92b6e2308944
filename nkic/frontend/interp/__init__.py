"""The interpreter core of the specialiser, one concern per module; `specialiser.py` composes
them into the `Specialiser`."""
