"""The development entry points, run as modules from the checkout's root: ``python -m
scripts.devservices`` (`make run`, `make test`), ``python -m scripts.devcluster`` (`make
cluster`). ``scripts/check_runtime.py`` alone runs by its path, from inside the runtime
virtualenv, where nothing of the checkout may be importable."""
