"""Deployment files; a package only so that the test drivers in it are imported by name
(``from deploy.jupyterhub import hub_session``)."""
