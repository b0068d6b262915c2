"""Experiments that chose a design: each prints its table beside the baseline of the same run."""
