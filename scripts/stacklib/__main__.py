"""Entry point: `python3 scripts/stacklib ARGS` (what scripts/stack runs)."""
import os
import sys

# Run as a directory, this file's own directory is sys.path[0]; the package's parent must be instead.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from stacklib.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
