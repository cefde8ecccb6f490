"""``webconsole.throttle`` on its own: the backoff, the bounded table, how addresses are
keyed, and the bounded argon2 pool (real threads, real argon2). The throttle's clock is a
counter the test advances, so a lock's length is checked exactly and without waiting."""

from __future__ import annotations

import asyncio
import threading

import pytest
from argon2 import PasswordHasher
from argon2.exceptions import VerificationError

from webconsole.throttle import GuardBusy, PasswordGuard, Throttle, Throttled, address_key


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def locked_for(throttle: Throttle, key: str) -> float | None:
    """Seconds ``key`` is still locked, or ``None`` when ``begin`` would count it (it is
    then counted: call only where one more attempt is meant)."""
    try:
        throttle.begin(key)
    except Throttled as exc:
        return exc.retry_after
    return None


def test_backoff_doubles_after_the_free_attempts_up_to_the_cap() -> None:
    clock = Clock()
    throttle = Throttle(free=3, base=2.0, cap=10.0, forget=100.0, clock=clock)
    for _ in range(3):
        throttle.begin("k")  # the third earns the first lock
    assert locked_for(throttle, "k") == 2.0
    clock.now += 2.0
    throttle.begin("k")  # the fourth failure: 4 s
    assert locked_for(throttle, "k") == 4.0
    clock.now += 4.0
    throttle.begin("k")  # the fifth: 8 s
    clock.now += 8.0
    throttle.begin("k")  # the sixth: 16 s, cut to the cap
    assert locked_for(throttle, "k") == 10.0


def test_a_lock_is_reported_once_and_runs_from_the_known_failure() -> None:
    clock = Clock()
    throttle = Throttle(free=1, base=5.0, clock=clock)
    throttle.begin("k")
    clock.now += 3.0  # the check took 3 s: the lock starts when it is known
    throttle.failed("k")
    firsts = []
    for _ in range(3):
        with pytest.raises(Throttled) as refused:
            throttle.begin("k")
        firsts.append(refused.value.first)
    assert firsts == [True, False, False]
    assert refused.value.retry_after == 5.0


def test_a_success_forgets_an_account_but_only_gives_back_an_address_count() -> None:
    clock = Clock()
    throttle = Throttle(free=2, clock=clock)
    throttle.begin("account")
    throttle.succeeded("account", forget=True)
    assert len(throttle) == 0
    throttle.begin("address")
    throttle.begin("address")  # locked by counting this attempt
    throttle.succeeded("address", forget=False)  # it was right: its count comes back
    assert locked_for(throttle, "address") is None  # one failure left, now two again
    assert locked_for(throttle, "address") is not None


def test_old_failures_are_forgotten() -> None:
    clock = Clock()
    throttle = Throttle(free=2, forget=60.0, clock=clock)
    throttle.begin("k")
    clock.now += 61.0
    throttle.begin("k")  # the first was forgotten: one failure, no lock
    assert locked_for(throttle, "k") is None


def test_the_table_is_bounded_and_never_forgets_a_live_lock() -> None:
    clock = Clock()
    throttle = Throttle(free=1, base=100.0, forget=50.0, capacity=3, clock=clock)
    for key in ("a", "b", "c"):
        throttle.begin(key)  # each locked for 100 s
    # full of live locks: a new key is refused rather than a lock dropped
    assert locked_for(throttle, "d") is not None
    assert len(throttle) == 3
    assert locked_for(throttle, "a") is not None
    clock.now += 101.0  # locks over, windows over: room again
    assert locked_for(throttle, "d") is None
    assert len(throttle) <= 3


def test_addresses_are_keyed_as_a_host_can_choose_them() -> None:
    assert address_key("127.0.0.1") == address_key("127.9.8.7") == address_key("::1") \
        == address_key("::ffff:127.0.0.1")
    assert address_key("2001:db8:1:2::1") == address_key("2001:db8:1:2:ffff::9")
    assert address_key("2001:db8:1:2::1") != address_key("2001:db8:1:3::1")
    assert address_key("198.51.100.1") != address_key("198.51.100.2")
    assert address_key("::ffff:198.51.100.1") == address_key("198.51.100.1")
    assert address_key(None) == address_key("") == "addr:unknown"
    assert address_key("not an address").startswith("addr:")


@pytest.mark.asyncio(loop_scope="session")
async def test_the_pool_is_bounded_and_keeps_the_loop_free() -> None:
    guard = PasswordGuard(workers=1, queue=0)
    started, release = threading.Event(), threading.Event()

    def held() -> str:
        started.set()
        release.wait(30)
        return "done"

    try:
        first = asyncio.ensure_future(guard.check(held))
        await asyncio.wait_for(asyncio.to_thread(started.wait, 30), 35)
        ticks = 0
        for _ in range(5):  # the loop runs while the check holds its thread
            await asyncio.sleep(0)
            ticks += 1
        assert ticks == 5 and not first.done()
        with pytest.raises(GuardBusy):
            await guard.check(held)
        release.set()
        assert await asyncio.wait_for(first, 30) == "done"
        # the slot is free again, and real argon2 runs through it
        hasher = PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1)
        stored = hasher.hash("a password of twelve")
        assert await guard.check(hasher.verify, stored, "a password of twelve") is True
        with pytest.raises(VerificationError):
            await guard.check(hasher.verify, stored, "another password")
    finally:
        release.set()
        guard.close()
