"""Research and diagnosis tools, run from the repository root as modules
(``python -m experiments.diagnose_windows --help``); see experiments/README.md."""
