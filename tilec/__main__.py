"""`python -m tilec`: the `tilec` command line."""
from tilec.cli import run

run()
