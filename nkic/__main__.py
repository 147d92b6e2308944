"""`python -m nkic` runs the command line."""

from .cli import main

main()
