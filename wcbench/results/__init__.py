"""A results folder and what it holds: the case records (``cases/<id>.json``), the report's strip
frames beside them, the videos' content hashes, ``run.json`` with the guard that keeps one
folder to one command, input and config, and the scorers its header names. ``run`` writes
these, ``report`` reads them."""
