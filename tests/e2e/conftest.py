"""The end-to-end tests' fixtures live in tests/conftest.py (the Celery workers are shared
with tests/client/)."""
