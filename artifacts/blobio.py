"""Blob bytes in and out of the database without extra whole-body copies.

Small bodies go through one plain INSERT / SELECT. Bodies larger than ``CHUNK`` take an
engine-specific streaming path so a 50 MB round trip costs about one body of memory per
direction, not three:

* SQLite: insert a ``zeroblob(n)`` row, then write and read through SQLite's incremental
  blob handle (``sqlite3.Connection.blobopen``), which reads straight into the returned
  ``bytes`` and writes straight from the caller's buffer.
* PostgreSQL: send the body in ``CHUNK`` slices into a per-connection temporary staging
  table and let the server concatenate them (``string_agg``) into the blob row; read it
  back in ``substring`` slices appended to a ``BytesIO``, whose ``getvalue()`` hands over
  its buffer without copying. The blobs column is stored uncompressed
  (``STORAGE EXTERNAL``, see the migration) so slices are fetched, not decompressed.
"""

from __future__ import annotations

import io
from typing import Any, ClassVar

from sqlalchemy import case, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from artifacts.dialect import insert_for
from artifacts.models import Blob

__all__ = ["CHUNK", "BlobIO", "PostgresBlobIO", "SqliteBlobIO", "blob_io_for"]

CHUNK = 4 * 1024 * 1024


class BlobIO:
    """Write (if absent) and read blob bytes on the caller's session."""

    dialect: ClassVar[str]

    @classmethod
    async def write(cls, session: AsyncSession, digest: str, body: bytes) -> None:
        """Store ``body`` under ``digest`` unless that blob already exists."""
        if len(body) <= CHUNK:
            # One round trip: the conflict clause already skips a blob that exists.
            await session.execute(
                insert_for(session, Blob).values(hash=digest, size=len(body), data=body)
                .on_conflict_do_nothing(index_elements=["hash"])
            )
            return
        if await session.scalar(select(Blob.hash).where(Blob.hash == digest)) is not None:
            return
        await cls._write_large(session, digest, body)

    @classmethod
    async def read(cls, session: AsyncSession, digest: str) -> bytes | None:
        """The stored bytes of ``digest`` (whatever they are now), or ``None`` if absent."""
        # One round trip for the common small blob: its bytes come with its length; a
        # large one comes back without bytes and is streamed in slices.
        length = func.length(Blob.data)
        found = (await session.execute(
            select(length, case((length <= CHUNK, Blob.data), else_=None))
            .where(Blob.hash == digest)
        )).first()
        if found is None or found[0] is None:
            return None
        size, data = found
        if size <= CHUNK:
            small: bytes = data if data is not None else b""
            return small
        return await cls._read_large(session, digest, int(size))

    @classmethod
    async def _write_large(cls, session: AsyncSession, digest: str, body: bytes) -> None:
        raise NotImplementedError

    @classmethod
    async def _read_large(cls, session: AsyncSession, digest: str, size: int) -> bytes | None:
        raise NotImplementedError


class SqliteBlobIO(BlobIO):
    dialect = "sqlite"

    @staticmethod
    async def _driver(session: AsyncSession) -> Any:
        # The aiosqlite connection of this session's transaction; its worker thread owns
        # the sqlite3 connection, so blob calls are queued onto that thread.
        raw = await (await session.connection()).get_raw_connection()
        return raw.driver_connection

    @classmethod
    async def _rowid(cls, session: AsyncSession, digest: str) -> int | None:
        rowid = await session.scalar(text("SELECT rowid FROM blobs WHERE hash = :h"),
                                     {"h": digest})
        return None if rowid is None else int(rowid)

    @classmethod
    async def _write_large(cls, session: AsyncSession, digest: str, body: bytes) -> None:
        result = await session.execute(
            insert_for(session, Blob)
            .values(hash=digest, size=len(body), data=func.zeroblob(len(body)))
            .on_conflict_do_nothing(index_elements=["hash"])
        )
        if not result.rowcount:  # type: ignore[attr-defined]
            return
        rowid = await cls._rowid(session, digest)
        aio = await cls._driver(session)

        def write() -> None:
            with aio._conn.blobopen("blobs", "data", rowid) as blob:
                blob.write(body)

        await aio._execute(write)

    @classmethod
    async def _read_large(cls, session: AsyncSession, digest: str, size: int) -> bytes | None:
        rowid = await cls._rowid(session, digest)
        if rowid is None:
            return None
        aio = await cls._driver(session)

        def read() -> bytes:
            with aio._conn.blobopen("blobs", "data", rowid, readonly=True) as blob:
                data: bytes = blob.read()
                return data

        data: bytes = await aio._execute(read)
        return data


class PostgresBlobIO(BlobIO):
    dialect = "postgresql"

    @classmethod
    async def _write_large(cls, session: AsyncSession, digest: str, body: bytes) -> None:
        await session.execute(text(
            "CREATE TEMPORARY TABLE IF NOT EXISTS pressroom_blob_staging "
            "(seq integer PRIMARY KEY, data bytea NOT NULL) ON COMMIT DELETE ROWS"
        ))
        await session.execute(text("DELETE FROM pressroom_blob_staging"))
        view = memoryview(body)
        try:
            for seq, start in enumerate(range(0, len(body), CHUNK)):
                await session.execute(
                    text("INSERT INTO pressroom_blob_staging (seq, data) VALUES (:s, :d)"),
                    {"s": seq, "d": view[start:start + CHUNK]},
                )
        finally:
            view.release()
        await session.execute(
            text(
                "INSERT INTO blobs (hash, size, data) "
                "SELECT :h, :n, string_agg(data, ''::bytea ORDER BY seq) "
                "FROM pressroom_blob_staging ON CONFLICT (hash) DO NOTHING"
            ),
            {"h": digest, "n": len(body)},
        )
        await session.execute(text("DELETE FROM pressroom_blob_staging"))

    @classmethod
    async def _read_large(cls, session: AsyncSession, digest: str, size: int) -> bytes | None:
        out = io.BytesIO()
        for start in range(0, size, CHUNK):
            chunk = await session.scalar(
                select(func.substring(Blob.data, start + 1, CHUNK)).where(Blob.hash == digest)
            )
            if chunk is None:
                return None
            out.write(chunk)
            del chunk
        return out.getvalue()  # hands over the buffer: no second copy of the body


_BY_DIALECT: dict[str, type[BlobIO]] = {"sqlite": SqliteBlobIO, "postgresql": PostgresBlobIO}


def blob_io_for(session: AsyncSession) -> type[BlobIO]:
    """The blob I/O strategy of the engine ``session`` is bound to."""
    return _BY_DIALECT[session.get_bind().dialect.name]
