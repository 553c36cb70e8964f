"""What replay and scoring use of the recorder beyond its public API: SDK client
defaults, request records, the model APIs (``APIS``: recognising, matching and reading
a request per API), role tags, the incremental fold, workspace spellings, the plain
codec, journals on disk and tape rewriting. Not for users: names here may change in
any release."""

from ._clients import (
    SDK_CONNECT_TIMEOUT,
    SDK_TIMEOUT,
    http_module,
    real_transport,
    sdk_client_options,
)
from ._errors import OverBudget
from ._session import SessionFold
from ._transport import Flavors, request_record
from .apis import CallDecoder
from .apis._registry import APIS, api_named, api_of_path, base_url_of, provider_of
from .apis._spec import ApiSpec, Item, canonical_json, without_defaults
from .redact._rules import given_values, is_secret_name
from .redact._scan import secret_preview
from .redact._scrub import WORKSPACE_PLACEHOLDER, workspace_spellings
from .tape._codec import from_plain, plain_path, to_plain
from .tape._journal import JOURNAL_SUFFIX, journal_tape
from .tape._limits import MAX_TAPE_BYTES, TapeBudget
from .tape._packed import PackedSession, packed_sessions, unpack_session
from .tape._rewrite import rewrite_tape

__all__ = [
    "APIS",
    "JOURNAL_SUFFIX",
    "MAX_TAPE_BYTES",
    "SDK_CONNECT_TIMEOUT",
    "SDK_TIMEOUT",
    "WORKSPACE_PLACEHOLDER",
    "ApiSpec",
    "CallDecoder",
    "Flavors",
    "Item",
    "OverBudget",
    "PackedSession",
    "SessionFold",
    "TapeBudget",
    "api_named",
    "api_of_path",
    "base_url_of",
    "canonical_json",
    "from_plain",
    "given_values",
    "http_module",
    "is_secret_name",
    "journal_tape",
    "packed_sessions",
    "plain_path",
    "provider_of",
    "real_transport",
    "request_record",
    "rewrite_tape",
    "sdk_client_options",
    "secret_preview",
    "to_plain",
    "unpack_session",
    "without_defaults",
    "workspace_spellings",
]
