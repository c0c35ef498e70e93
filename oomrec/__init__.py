"""oomrec: never launch a benchmark cell that is certain to run out of memory."""

__version__ = "0.1.0"
