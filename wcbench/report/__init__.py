"""Results -> what people read: summaries with bootstrap intervals, results.json and the CSV
files, the self-contained report.html with its plots, and the leaderboards (the checks a
submission must pass and the boards' rows). Everything here reads a results folder
(:mod:`wcbench.results`); re-scoring videos for ``submit`` and ``verify`` is :mod:`wcbench.run.audit`."""
