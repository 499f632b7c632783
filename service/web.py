"""The web page: a blueprint serving ``/`` and the page's static files.

The page is plain HTML, CSS and JavaScript modules (no build step, nothing
fetched from elsewhere). Everything it does goes through the public ``/v1``
API, so this blueprint only hands out files. The files live under
``/assets/`` rather than Flask's usual ``/static/``: the app is created as
``Flask("patience")``, whose own static folder would be the working directory's
``static/``, and the two must not shadow each other.
"""

from __future__ import annotations

from flask import Blueprint, Response

bp = Blueprint("web", __name__, static_folder="static", static_url_path="/assets")

#: The page loads only its own files and talks only to its own origin.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "img-src 'self' data:",
        "style-src 'self'",
        "script-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ]
)


@bp.get("/")
def index() -> Response:
    """Return the page."""
    return bp.send_static_file("index.html")


@bp.after_request
def secure_headers(response: Response) -> Response:
    """Add the content security policy to the page and its files."""
    response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "no-referrer")
    return response
