"""Credentials kept out of reports and logs: model URIs and store URLs with secrets masked."""

from __future__ import annotations

import re

_PASSWORD = re.compile(r"(://[^/@\s]*?:)[^/@\s]*@")
_SECRET_QUERY = re.compile(r"(?i)([?&;][^=&#;]*(?:key|token|secret|passw|auth)[^=&#;]*=)[^&#;]*")


def redacted_uri(uri: str) -> str:
    """The model URI with any password or secret-looking query value replaced by ***."""
    return _SECRET_QUERY.sub(r"\1***", _PASSWORD.sub(r"\1***@", uri))


def masked_url(url: str) -> str:
    """A SQLAlchemy URL with its password replaced by ``***``, for logs and messages."""
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except (sa.exc.ArgumentError, ValueError):
        return re.sub(r"(://[^:/@]*:)[^@/]*@", r"\1***@", url)
