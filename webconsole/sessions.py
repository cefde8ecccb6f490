"""Who is signed in: server-side sessions behind a signed, HttpOnly, SameSite cookie, and
the CSRF token every form carries.

A session is a random id the server keeps in memory with the reviewer's normalized name,
its CSRF token and an expiry; the cookie holds only that id, signed (``itsdangerous``) with
the console's secret so a forged or altered cookie is refused before any lookup. Keeping
sessions on the server (not in the cookie) makes sign-out real — the id stops working
everywhere at once — and a console restart signs everyone out, which costs a reviewer one
sign-in and removes any question of what an old cookie still allows.

CSRF: every form holds the session's token in a hidden field and every POST must send it
back (compared in constant time). The sign-in form, which comes before a session, uses a
double-submit token: a short-lived signed cookie and the same value in the form.

Cookies are ``HttpOnly`` (no script reads them), ``SameSite=Strict`` (no other site's page
can send them) and ``Secure`` when the console is served over HTTPS (``secure_cookies``).
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass

from itsdangerous import BadSignature, URLSafeTimedSerializer

SESSION_COOKIE = "pressroom_session"
SIGNIN_COOKIE = "pressroom_signin"
#: how long a session lasts without a new sign-in
SESSION_SECONDS = 8 * 3600
#: how long a sign-in form stays valid
SIGNIN_FORM_SECONDS = 900


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

    def start(self, reviewer: str) -> tuple[Session, str]:
        """A new session for ``reviewer`` and the cookie value that names it."""
        self._expire()
        session = Session(session_id=secrets.token_urlsafe(32), reviewer=reviewer,
                          csrf_token=secrets.token_urlsafe(32),
                          expires_at=time.monotonic() + self._lifetime)
        self._live[session.session_id] = session
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

    # ------------------------------------------------------------------ sign-in form
    def signin_token(self) -> tuple[str, str]:
        """A token for the sign-in form and the signed cookie that must come back with it."""
        token = secrets.token_urlsafe(24)
        return token, self._form_signer.dumps(token)

    def signin_token_ok(self, cookie: str | None, submitted: str | None) -> bool:
        if not cookie or not submitted:
            return False
        try:
            token = self._form_signer.loads(cookie, max_age=SIGNIN_FORM_SECONDS)
        except BadSignature:
            return False
        return hmac.compare_digest(str(token), submitted)


def csrf_ok(session: Session, submitted: str | None) -> bool:
    """Whether a form's token is this session's (constant-time)."""
    return bool(submitted) and hmac.compare_digest(session.csrf_token, str(submitted))


__all__ = ["SESSION_COOKIE", "SESSION_SECONDS", "SIGNIN_COOKIE", "Session", "Sessions",
           "csrf_ok"]
