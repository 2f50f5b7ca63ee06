"""`python -m tilec.cli`."""
from tilec.cli import run

run()
