"""Precision Explorer's tests: a package, so that its helpers are imported by name
(``from tests.support.net import free_port``), never by file path."""
