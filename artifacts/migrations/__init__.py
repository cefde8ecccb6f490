"""Alembic migrations of the artifact store, shipped inside the package.

Run them through ``artifacts.migrate`` (or ``pressroom db upgrade``); there is no
``alembic.ini``: the configuration is built in code and the connection is handed over.
"""
