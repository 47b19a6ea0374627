"""The workshop Voila server behind ``precision-explorer app``.

- :mod:`explorer.server.hosts`: which ``Host`` headers the server answers (DNS-rebinding guard).
- :mod:`explorer.server.kernels`: a kernel manager that caps the number of kernels.
- :mod:`explorer.server.voila_main`: Voila with both guards installed
  (``python -m explorer.server.voila_main NOTEBOOK ...``).
- :mod:`explorer.server.process_tree`: stop a server and every process it started.

Only :mod:`~explorer.server.kernels` and :mod:`~explorer.server.voila_main` import
Jupyter; the others are cheap and used by the command line before Voila starts.
"""
