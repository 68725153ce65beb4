"""Failure drills the suite runs (marked slow: `make test-slow`), run as modules from the
checkout's root: ``python -m drills.cluster`` (`make drill`)."""
