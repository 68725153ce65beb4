"""The benchmarks, run as modules from the checkout's root (``python -m bench.<name>``);
``make bench`` runs them all. bench/README.md says how each one works."""
