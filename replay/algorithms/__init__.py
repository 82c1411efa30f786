"""The congestion-control algorithms: one module per algorithm, each a few named hooks and a
tiny private state (the registry, :mod:`hscc_trace.replay.registry`, discovers every module here
that defines ``ALGORITHMS``). The engine they plug into lives one folder up."""
