"""Password guessing against the console: a throttle with backoff, and argon2 off the loop.

Two places take a reviewer's password: the sign-in form and the decision form (whose
password decrypts the reviewer's signing key: ``webconsole.accounts``). Both are guarded
the same way (SECURITY.md section 8, "Guessing"):

* ``Throttle`` — failures counted per key in a bounded table; after ``free`` failures
  each further one locks the key for ``base`` seconds, doubling up to ``cap``; a key
  with no failure for ``forget`` seconds (and no lock left) starts over. While a key is
  locked every attempt is refused *before* any password is checked — the right password
  too, or throttling would only slow guessing, not stop it. An attempt is counted when it
  begins, not when its answer is known, so parallel requests cannot all slip in before
  the first failure is recorded; a success gives the count back, and a lock runs from
  when the failure that earned it is known.
* ``PasswordGuard`` — one throttle per account (the normalized name, shared by both
  forms: a stolen session cookie gets no guesses of its own) and one per address
  (``address_key``), and the bounded thread pool every argon2 run goes through
  (``check``): the hash verification at sign-in and the key-unlock KDF on the decision
  form. argon2 releases the GIL, so the event loop keeps serving every other request
  while a password is checked; at most ``workers`` checks run at once and at most
  ``queue`` more wait (``GuardBusy`` beyond that), so a flood costs bounded CPU and
  memory (argon2 takes 64 MiB per run).

Memory is bounded: a table holds at most ``capacity`` keys (account names are kept as
their sha256). A full table first drops keys whose lock and window are over; when every
key is still live, a new key is refused as if locked (``retry_after`` of ``base``) rather
than an old lock forgotten — an attacker with many addresses can make others wait, never
make a locked key guessable again.

An address behind the console's own reverse proxy is the proxy's: every local sign-in
through it shares the address limit, which is why that limit is looser than the account's.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["Attempt", "GuardBusy", "PasswordGuard", "Throttle", "Throttled", "address_key"]

T = TypeVar("T")


class Throttled(Exception):
    """Too many failed attempts: refused without checking, ``retry_after`` seconds left.
    ``first`` is true for the first refusal of a lock (the one that is audited)."""

    def __init__(self, retry_after: float, *, first: bool) -> None:
        super().__init__(f"too many failed password attempts; try again in "
                         f"{math.ceil(retry_after)} s")
        self.retry_after = retry_after
        self.first = first


class GuardBusy(Exception):
    """Every password-check slot is taken; the request is refused, not queued."""

    def __init__(self) -> None:
        super().__init__("the console is busy checking passwords; try again shortly")


@dataclass
class _Record:
    failures: int = 0
    last: float = 0.0
    locked_until: float = 0.0
    #: whether the current lock's first refusal was reported (``Throttled.first``)
    reported: bool = False


class Throttle:
    """Failure counts with backoff for a bounded number of keys (see the module docstring)."""

    def __init__(self, *, free: int, base: float = 2.0, cap: float = 900.0,
                 forget: float = 900.0, capacity: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if free < 1 or capacity < 1:
            raise ValueError("a throttle needs free >= 1 and capacity >= 1")
        self.free, self.base, self.cap, self.forget = free, base, cap, forget
        self.capacity = capacity
        self._clock = clock
        self._records: OrderedDict[str, _Record] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def begin(self, key: str) -> None:
        """Count one attempt for ``key``, or raise ``Throttled`` (nothing counted)."""
        now = self._clock()
        record = self._records.get(key)
        if record is not None and self._stale(record, now):
            del self._records[key]
            record = None
        if record is None:
            if len(self._records) >= self.capacity and not self._make_room(now):
                raise Throttled(self.base, first=False)
            record = self._records[key] = _Record()
        if now < record.locked_until:
            first, record.reported = not record.reported, True
            raise Throttled(record.locked_until - now, first=first)
        record.failures += 1
        record.last = now
        if record.failures >= self.free:  # a new lock, to be reported once
            record.locked_until = now + self._lock_seconds(record.failures)
            record.reported = False
        self._records.move_to_end(key)

    def failed(self, key: str) -> None:
        """The attempt ``begin`` counted was wrong: a lock it started runs from now, when
        the answer is known (a check can take longer than the first lock)."""
        record = self._records.get(key)
        if record is not None and record.failures >= self.free:
            now = self._clock()
            record.last = now
            record.locked_until = max(record.locked_until,
                                      now + self._lock_seconds(record.failures))

    def succeeded(self, key: str, *, forget: bool) -> None:
        """The attempt ``begin`` counted was right: ``forget`` drops the key's record (an
        account signed in), else only that attempt's count is given back (an address)."""
        record = self._records.get(key)
        if record is None:
            return
        if forget:
            del self._records[key]
            return
        record.failures = max(0, record.failures - 1)
        if record.failures < self.free:
            record.locked_until = 0.0

    def _lock_seconds(self, failures: int) -> float:
        return float(min(self.cap, self.base * 2 ** min(failures - self.free, 32)))

    def _stale(self, record: _Record, now: float) -> bool:
        return now >= record.locked_until and now - record.last >= self.forget

    def _make_room(self, now: float) -> bool:
        """Drop stale records (oldest first); whether there is room for one more."""
        for key in [k for k, r in self._records.items() if self._stale(r, now)]:
            del self._records[key]
        return len(self._records) < self.capacity


def address_key(host: str | None) -> str:
    """The throttle key of a peer address: loopback is one address (any local process can
    use all of 127.0.0.0/8), an IPv6 address counts as its /64 (one host gets a whole
    /64), IPv4 as itself."""
    if not host:
        return "addr:unknown"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return "addr:" + hashlib.sha256(host.encode("utf-8", "surrogatepass")).hexdigest()
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return "addr:loopback"
    if isinstance(ip, ipaddress.IPv6Address):
        return "addr:" + str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return f"addr:{ip}"


def _account_key(normalized: str) -> str:
    return "acct:" + hashlib.sha256(normalized.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class Attempt:
    """One password attempt begun with ``PasswordGuard.begin``; then ``succeeded`` when the
    password was right, ``failed`` when it was wrong (it was counted when it began; this
    starts its lock's clock), ``cancel`` when it was never checked."""

    guard: PasswordGuard
    account: str
    address: str

    def succeeded(self) -> None:
        self.guard.accounts.succeeded(self.account, forget=True)
        self.guard.addresses.succeeded(self.address, forget=False)

    def failed(self) -> None:
        """The password was wrong (already counted): any lock it earned starts now."""
        self.guard.accounts.failed(self.account)
        self.guard.addresses.failed(self.address)

    def cancel(self) -> None:
        """No password was checked after all (the console was busy): give both counts
        back, forgetting nothing."""
        self.guard.accounts.succeeded(self.account, forget=False)
        self.guard.addresses.succeeded(self.address, forget=False)


class PasswordGuard:
    """The console's password throttles and argon2 pool (see the module docstring)."""

    def __init__(self, *, accounts: Throttle | None = None, addresses: Throttle | None = None,
                 workers: int = 2, queue: int = 16) -> None:
        self.accounts = Throttle(free=5) if accounts is None else accounts
        self.addresses = Throttle(free=20) if addresses is None else addresses
        self._executor = ThreadPoolExecutor(max_workers=workers,
                                            thread_name_prefix="console-argon2")
        self._slots = workers + queue
        self._taken = 0
        self._lock = threading.Lock()

    def begin(self, normalized_name: str, host: str | None) -> Attempt:
        """Count an attempt at ``normalized_name``'s password from peer ``host``, or raise
        ``Throttled`` when either the account or the address is locked (then nothing is
        counted for either)."""
        account, address = _account_key(normalized_name), address_key(host)
        self.addresses.begin(address)
        try:
            self.accounts.begin(account)
        except Throttled:
            self.addresses.succeeded(address, forget=False)  # give back: nothing was tried
            raise
        return Attempt(self, account, address)

    async def check(self, fn: Callable[..., T], *args: object) -> T:
        """``fn(*args)`` (an argon2 run) in the pool; ``GuardBusy`` when no slot is free.
        A slot is held until the thread finishes, even if the request is gone."""
        with self._lock:
            if self._taken >= self._slots:
                raise GuardBusy
            self._taken += 1
        try:
            future = self._executor.submit(fn, *args)
        except BaseException:
            self._release(None)
            raise
        future.add_done_callback(self._release)
        return await asyncio.wrap_future(future)

    def _release(self, _future: object) -> None:
        with self._lock:
            self._taken -= 1

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
