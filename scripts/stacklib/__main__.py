"""Entry point: `python3 scripts/stacklib ARGS` (what scripts/stack runs)."""
import os
import signal
import sys

# Run as a directory, this file's own directory is sys.path[0]; the package's parent must be there instead.
_HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0]) == _HERE:
    sys.path[0] = os.path.dirname(_HERE)
else:
    sys.path.insert(0, os.path.dirname(_HERE))

from stacklib.cli import main  # noqa: E402

# As a shell script: a closed pipe (`scripts/stack logs | head`) ends the program quietly.
signal.signal(signal.SIGPIPE, signal.SIG_DFL)

sys.exit(main(sys.argv[1:]))
