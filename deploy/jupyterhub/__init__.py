"""The JupyterHub deployment: ``jupyterhub_config.py`` is the product (JupyterHub loads it by
path, and it imports nothing from the tests); ``hub_session`` and ``measure_user_memory`` drive
it for the tests and for measurements (run from the repository root, ``python -m
deploy.jupyterhub.measure_user_memory``)."""
