"""Suite + model -> scored records: ``wcbench run`` (generate, store, score), ``wcbench score``
(videos made elsewhere, from a manifest), ``wcbench export`` (what another tool needs to make
those videos), the frames a report shows, and claiming a results folder."""
