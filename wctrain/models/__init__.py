"""Trainable world models: the protocol the trainer needs (``base``), the flow-matching sampler
(``sampling``), tinywm and tinywan (with their shared ``parts``), the registry that builds and
exports them, and the adapter that lets ``wcbench run`` run them (``wcbench_adapter``)."""
