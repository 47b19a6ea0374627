"""The workshop Voila server behind ``precision-explorer app``.

- :mod:`explorer.server.hosts`: which ``Host`` headers the server answers (DNS-rebinding guard).
- :mod:`explorer.server.kernels`: a kernel manager that caps the number of kernels.
- :mod:`explorer.server.voila_main`: Voila with both guards installed
  (``python -m explorer.server.voila_main NOTEBOOK ...``).
- :mod:`explorer.server.websocket`: the kernel websocket, v1 protocol only.
- :mod:`explorer.server.process_tree`: stop a server and every process it started; stop the
  server when its launcher dies.

Only :mod:`~explorer.server.kernels`, :mod:`~explorer.server.websocket` and
:mod:`~explorer.server.voila_main` import Jupyter; the others are cheap and used by the
command line before Voila starts.
"""
