"""The app database's alembic migrations (``versions/``), run by :mod:`ragloom_app.db.migrate`.

A schema change is a new revision here, never an edit of an old one: write it with
``op`` calls that SQLite and PostgreSQL both run (an ``ALTER`` SQLite lacks goes through
``op.batch_alter_table``), and test it upgrading a database of the revision before.
"""
