"""Alembic's entry point for the course database: the URL comes from store.upgrade() (never
from an alembic.ini, so that no password sits in a file), the target is store.Base.metadata."""
from __future__ import annotations

from alembic import context

from cudalab.course import store

config = context.config
target_metadata = store.Base.metadata


def run_migrations_online() -> None:
    engine = store.make_engine(config.attributes["url"]) if "url" in config.attributes else None
    connectable = engine or context.config.attributes["connection"]
    with connectable.connect() as connection:
        # render_as_batch: SQLite alters a table by copying it, which later versions may need.
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    if engine is not None:
        engine.dispose()


run_migrations_online()
