"""hscc-trace: TCP trace analyzer and offline replayer for high-speed congestion control.

Importing the package changes nothing in the process (no exit handler, no garbage-collector
or allocator setting, no thread): the CLI switches its performance settings on
(:func:`hscc_trace.perf.activate`).
"""

__version__ = "0.1.0"
