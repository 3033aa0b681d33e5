"""Performance benchmarks of wcbench and wctrain, run from the repository root as modules
(``python -m benchmarks.bench_estimator --help``); each module's docstring says what it measures
and where its figures appear. ``vq_probes`` holds the quality scorer's test material, shared
with the tests; ``options`` parses the ``--option KEY=VALUE`` estimator settings."""
