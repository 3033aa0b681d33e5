"""Suite + model -> scored records in a results folder: ``wcbench run`` (generate, store, score),
``wcbench score`` (videos made elsewhere, from a manifest, in a pool of processes), ``wcbench
merge``, ``wcbench export`` (what another tool needs to make those videos), and ``wcbench submit``
/ ``verify``, which re-score a folder's videos (``audit``)."""
