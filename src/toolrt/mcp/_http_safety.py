"""What keeps a served runtime safe on HTTP: loopback by default, ``Origin``/``Host`` checks, a token.

A tool server on a local port is reachable by every web page the user opens: a page may POST to
``http://127.0.0.1:PORT`` (its ``Origin`` gives it away), or rebind its own DNS name to 127.0.0.1 (its
``Host`` does). The SDK's transport security refuses both (403 / 421) when told which hosts and
origins are local; :func:`transport_security` tells it. Off loopback, anyone on the network can
connect, so a bearer token is required (:func:`require_token_off_loopback` refuses to start without
one) and checked by the SDK's bearer middleware through :class:`StaticTokenVerifier`, in constant
time; a request without it gets 401.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from mcp.server.transport_security import TransportSecuritySettings

__all__ = [
    "TOKEN_ENV",
    "StaticTokenVerifier",
    "auth_settings",
    "is_loopback",
    "require_token_off_loopback",
    "transport_security",
]

TOKEN_ENV = "TOOLRT_MCP_TOKEN"
"""The environment variable ``toolrt mcp serve`` reads the bearer token from."""

_LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address) is reachable only from this machine."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def require_token_off_loopback(host: str, token: str | None) -> None:
    """A one-line ``ValueError`` when ``host`` is not loopback and there is no token (or it is blank)."""
    if token is not None and not token.strip():
        raise ValueError("the bearer token is empty; set TOOLRT_MCP_TOKEN or --token-file to a secret")
    if token is None and not is_loopback(host):
        raise ValueError(
            f"binding {host} (not loopback) needs a bearer token: set {TOKEN_ENV} or pass --token-file "
            "(every client then sends 'Authorization: Bearer <token>')"
        )


def transport_security(host: str, port: int) -> TransportSecuritySettings:
    """DNS-rebinding protection for a server bound to ``host``: only local hosts and origins pass."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = ["127.0.0.1", "localhost", "[::1]"]
    if not is_loopback(host):
        hosts.append(f"[{host}]" if ":" in host else host)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{name}:{port}" for name in hosts] + [f"{name}:*" for name in hosts],
        allowed_origins=[f"{scheme}://{name}:*" for name in hosts for scheme in ("http", "https")]
        + [f"{scheme}://{name}" for name in hosts for scheme in ("http", "https")],
    )


class StaticTokenVerifier:
    """The SDK's ``TokenVerifier`` for one shared secret, compared in constant time."""

    def __init__(self, token: str) -> None:
        self._token = token.encode()

    async def verify_token(self, token: str) -> AccessToken | None:
        """An access token for the one client when ``token`` is the secret, else ``None`` (401)."""
        from mcp.server.auth.provider import AccessToken

        if hmac.compare_digest(token.encode(), self._token):
            return AccessToken(token="bearer", client_id="toolrt-mcp-client", scopes=[])
        return None


def auth_settings(url: str) -> Any:
    """The SDK's auth settings for a server that only checks bearer tokens (no OAuth routes)."""
    from mcp.server.auth.settings import AuthSettings
    from pydantic import AnyHttpUrl

    # issuer_url is required by the model but unused: no authorization-server routes are mounted.
    return AuthSettings(issuer_url=AnyHttpUrl(url), resource_server_url=None)
