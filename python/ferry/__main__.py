"""`python -m ferry ARGS`: the ferry command, as the `ferry` entry point
runs it (ferry/_cli.py)."""
from ._cli import main

if __name__ == "__main__":
    main()
