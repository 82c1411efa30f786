"""hscc-trace: TCP trace analyzer and offline replayer for high-speed congestion control."""

__version__ = "0.1.0"
