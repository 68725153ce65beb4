"""The benchmark's reference Django app, served by its own API server beside the service's:
``/bare`` (a fixed JSON body) and ``/lean/files/<id>`` (an authenticated single-file GET done
the shortest way). See bench/README.md."""
