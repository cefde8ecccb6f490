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

from artifacts.sqltx import SqliteTx, Tx

__all__ = ["CHUNK", "read_blob_row", "write_blob"]

CHUNK = 4 * 1024 * 1024

# Length and (for a small blob) bytes in one round trip; a large one comes back without
# its bytes and is streamed in slices.
BLOB_COLUMNS = f"length(b.data), CASE WHEN length(b.data) <= {CHUNK} THEN b.data END"


def write_blob(tx: Tx, digest: str, body: bytes) -> None:
    """Store ``body`` under ``digest`` unless that blob already exists."""
    if len(body) <= CHUNK:
        # One round trip: the conflict clause already skips a blob that exists.
        tx.run("INSERT INTO blobs (hash, size, data) VALUES (:h, :n, :d) "
               "ON CONFLICT (hash) DO NOTHING", {"h": digest, "n": len(body), "d": body})
        return
    if isinstance(tx, SqliteTx):
        _sqlite_write_large(tx, digest, body)
    elif tx.one("SELECT 1 FROM blobs WHERE hash = :h", {"h": digest}) is None:
        _pg_write_large(tx, digest, body)


def read_blob_row(tx: Tx, digest: str, size: int | None, data: bytes | None) -> bytes | None:
    """The bytes behind a row selected with ``BLOB_COLUMNS`` (``size`` None: no blob)."""
    if size is None:
        return None
    if size <= CHUNK:
        return bytes(data) if data is not None else b""
    if isinstance(tx, SqliteTx):
        return _sqlite_read_large(tx, digest)
    return _pg_read_large(tx, digest, int(size))


def _rowid(tx: SqliteTx, digest: str) -> int | None:
    row = tx.one("SELECT rowid FROM blobs WHERE hash = :h", {"h": digest})
    return None if row is None else int(row[0])


def _sqlite_write_large(tx: SqliteTx, digest: str, body: bytes) -> None:
    if not tx.run("INSERT INTO blobs (hash, size, data) VALUES (:h, :n, zeroblob(:n)) "
                  "ON CONFLICT (hash) DO NOTHING", {"h": digest, "n": len(body)}):
        return
    rowid = _rowid(tx, digest)
    assert rowid is not None
    with tx.conn.blobopen("blobs", "data", rowid) as blob:
        blob.write(body)


def _sqlite_read_large(tx: SqliteTx, digest: str) -> bytes | None:
    rowid = _rowid(tx, digest)
    if rowid is None:
        return None
    with tx.conn.blobopen("blobs", "data", rowid, readonly=True) as blob:
        data: bytes = blob.read()
    return data


def _pg_write_large(tx: Tx, digest: str, body: bytes) -> None:
    tx.run("CREATE TEMPORARY TABLE IF NOT EXISTS pressroom_blob_staging "
           "(seq integer PRIMARY KEY, data bytea NOT NULL) ON COMMIT DELETE ROWS")
    tx.run("DELETE FROM pressroom_blob_staging")
    view = memoryview(body)
    try:
        for seq, start in enumerate(range(0, len(body), CHUNK)):
            tx.run("INSERT INTO pressroom_blob_staging (seq, data) VALUES (:s, :d)",
                   {"s": seq, "d": view[start:start + CHUNK]})
    finally:
        view.release()
    tx.run("INSERT INTO blobs (hash, size, data) "
           "SELECT :h, :n, string_agg(data, ''::bytea ORDER BY seq) "
           "FROM pressroom_blob_staging ON CONFLICT (hash) DO NOTHING",
           {"h": digest, "n": len(body)})
    tx.run("DELETE FROM pressroom_blob_staging")


def _pg_read_large(tx: Tx, digest: str, size: int) -> bytes | None:
    out = io.BytesIO()
    for start in range(0, size, CHUNK):
        row = tx.one("SELECT substring(data FROM :s FOR :n) FROM blobs WHERE hash = :h",
                     {"s": start + 1, "n": CHUNK, "h": digest})
        if row is None or row[0] is None:
            return None
        out.write(row[0])
        del row
    return out.getvalue()  # hands over the buffer: no second copy of the body
