"""Who is signed in: server-side sessions behind a signed, HttpOnly, SameSite cookie, and
the CSRF token every form carries.

A session is a random id the server keeps in memory with the reviewer's normalized name,
its CSRF token and an expiry; the cookie holds only that id, signed (``itsdangerous``) with
the console's secret so a forged or altered cookie is refused before any lookup. Keeping
sessions on the server (not in the cookie) makes sign-out real — the id stops working
everywhere at once — and a console restart signs everyone out, which costs a reviewer one
sign-in and removes any question of what an old cookie still allows.

CSRF: every form holds the session's token in a hidden field and every POST must send it
back (compared in constant time, as UTF-8 bytes: any text a request sends is a wrong token,
never an error). The sign-in form, which comes before a session, uses a double-submit
token: a short-lived signed cookie and the same value in the form, good for one attempt —
a spent token is remembered until it would have expired (at most ``MAX_SPENT`` of them;
when that many are live, sign-in forms are refused rather than one forgotten).

A trusted proxy's assertion is that reviewer's sign-in: ``for_proxy`` keeps at most one
proxy session per reviewer and hands it to every proxied request that does not bring its
cookie, so a client that never keeps cookies does not make a session per request.

Cookies are ``HttpOnly`` (no script reads them), ``SameSite=Strict`` (no other site's page
can send them) and ``Secure`` when the console is served over HTTPS (``secure_cookies``).
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass

from itsdangerous import BadSignature, URLSafeTimedSerializer

SESSION_COOKIE = "pressroom_session"
SIGNIN_COOKIE = "pressroom_signin"
#: how long a session lasts without a new sign-in
SESSION_SECONDS = 8 * 3600
#: how long a sign-in form stays valid
SIGNIN_FORM_SECONDS = 900
#: the most spent sign-in form tokens remembered at once (each until it would expire)
MAX_SPENT = 50_000


@dataclass
class Session:
    session_id: str
    reviewer: str
    csrf_token: str
    expires_at: float


class Sessions:
    """The live sessions of one console process."""

    def __init__(self, secret: bytes, *, lifetime: float = SESSION_SECONDS) -> None:
        self._signer = URLSafeTimedSerializer(secret, salt="pressroom-console-session")
        self._form_signer = URLSafeTimedSerializer(secret, salt="pressroom-console-signin")
        self._lifetime = lifetime
        self._live: dict[str, Session] = {}
        #: reviewer -> the id of the session a trusted proxy's assertion made for them
        self._proxied: dict[str, str] = {}
        #: spent sign-in form tokens -> when they would have expired (``time.time``)
        self._spent: OrderedDict[str, float] = OrderedDict()

    def __len__(self) -> int:
        """How many sessions are live."""
        self._expire()
        return len(self._live)

    def start(self, reviewer: str) -> tuple[Session, str]:
        """A new session for ``reviewer`` and the cookie value that names it."""
        self._expire()
        session = Session(session_id=secrets.token_urlsafe(32), reviewer=reviewer,
                          csrf_token=secrets.token_urlsafe(32),
                          expires_at=time.monotonic() + self._lifetime)
        self._live[session.session_id] = session
        return session, self._signer.dumps(session.session_id)

    def for_proxy(self, reviewer: str) -> tuple[Session, str]:
        """The session a trusted proxy's assertion of ``reviewer`` uses — the one made for
        an earlier assertion while it lives, else a new one — and the cookie naming it."""
        self._expire()
        session = self._live.get(self._proxied.get(reviewer, ""))
        if session is None or session.reviewer != reviewer:
            session, _ = self.start(reviewer)
            self._proxied[reviewer] = session.session_id
        return session, self._signer.dumps(session.session_id)

    def find(self, cookie: str | None) -> Session | None:
        """The live session a cookie names, or ``None`` (absent, forged, expired, ended)."""
        if not cookie:
            return None
        try:
            session_id = self._signer.loads(cookie, max_age=int(self._lifetime))
        except BadSignature:
            return None
        session = self._live.get(str(session_id))
        if session is None or session.expires_at < time.monotonic():
            self._live.pop(str(session_id), None)
            return None
        return session

    def end(self, session: Session) -> None:
        self._live.pop(session.session_id, None)

    def end_all(self, reviewer: str) -> None:
        for session_id in [s.session_id for s in self._live.values() if s.reviewer == reviewer]:
            self._live.pop(session_id, None)

    def _expire(self) -> None:
        now = time.monotonic()
        for session_id in [s.session_id for s in self._live.values() if s.expires_at < now]:
            self._live.pop(session_id, None)
        for reviewer in [r for r, i in self._proxied.items() if i not in self._live]:
            del self._proxied[reviewer]

    # ------------------------------------------------------------------ sign-in form
    def signin_token(self) -> tuple[str, str]:
        """A token for the sign-in form and the signed cookie that must come back with it."""
        token = secrets.token_urlsafe(24)
        return token, self._form_signer.dumps(token)

    def valid_signin_token(self, cookie: str | None, submitted: str | None) -> str | None:
        """The sign-in form's token when ``submitted`` is the one ``cookie`` signs, it has
        not expired and was not spent; else ``None``. Spend it (``spend_signin_token``)
        when the attempt it carries is made."""
        if not cookie or not submitted:
            return None
        try:
            token = self._form_signer.loads(cookie, max_age=SIGNIN_FORM_SECONDS)
        except BadSignature:
            return None
        if not isinstance(token, str) or not same_token(token, submitted):
            return None
        self._forget_spent()
        if token in self._spent:
            return None
        return token

    def spend_signin_token(self, token: str) -> bool:
        """Remember ``token`` as used until it would expire; ``False`` (the form must be
        refused) when ``MAX_SPENT`` live tokens are remembered already."""
        self._forget_spent()
        if len(self._spent) >= MAX_SPENT:
            return False
        self._spent[token] = time.time() + SIGNIN_FORM_SECONDS
        return True

    def _forget_spent(self) -> None:
        """Drop the tokens past expiry: each is kept a full form lifetime from when it was
        spent (at least as long as it could still be accepted), so the oldest come first."""
        now = time.time()
        while self._spent and next(iter(self._spent.values())) < now:
            self._spent.popitem(last=False)


def same_token(expected: str, submitted: str) -> bool:
    """Whether two tokens are equal, in constant time, compared as UTF-8 bytes:
    ``hmac.compare_digest`` refuses ``str`` with non-ASCII characters (a ``TypeError``, a
    500), and a token is whatever text the request sent."""
    return hmac.compare_digest(expected.encode("utf-8", "surrogatepass"),
                               submitted.encode("utf-8", "surrogatepass"))


def csrf_ok(session: Session, submitted: str | None) -> bool:
    """Whether a form's token is this session's (constant-time)."""
    return bool(submitted) and same_token(session.csrf_token, str(submitted))


__all__ = ["MAX_SPENT", "SESSION_COOKIE", "SESSION_SECONDS", "SIGNIN_COOKIE", "Session",
           "Sessions", "csrf_ok", "same_token"]
