"""`python -m tilec.cli`."""
import sys

from tilec.cli import main

sys.exit(main())
