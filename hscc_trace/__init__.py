"""hscc-trace: TCP trace analyzer and offline replayer for high-speed congestion control."""

from hscc_trace import _alloc  # noqa: F401  (process-level memory settings; see that module)

__version__ = "0.1.0"
