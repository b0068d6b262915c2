import sys

from .cli import interrupts

interrupts.install()  # before numpy and torch start their threads (see backend.cli.interrupts)
try:
    from .cli.main import main

    status = main()
except KeyboardInterrupt:  # Ctrl+C while Python is still importing (torch takes a while)
    print("interrupted (Ctrl+C): stopped before any file was written", file=sys.stderr)
    status = 130
sys.exit(status)
