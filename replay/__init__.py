"""Replay engine and congestion-control algorithm library (installed as hscc_trace.replay)."""
