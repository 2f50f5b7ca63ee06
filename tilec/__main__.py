"""`python -m tilec`: the `tilec` command line."""
import sys

from tilec.cli import main

sys.exit(main())
