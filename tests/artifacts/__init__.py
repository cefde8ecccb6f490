"""Tests of the artifact store, run against SQLite and PostgreSQL."""
