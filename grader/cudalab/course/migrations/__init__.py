"""The course database's schema history (Alembic): env.py and one file per version under
versions/; store.upgrade() carries a database to the newest at every start of the service."""
