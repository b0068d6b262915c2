"""python -m backend: the command line, where it writes, and its signal handling."""
