"""Where Azure lives for gpushare's reads (the guard's agent-pool list, preflight's region reads), and what a failed
read tells the user.

- Subscription: the Pulumi program asks the azure-native provider (`authorization.get_client_config`); the CLI
  has no provider, so it takes `azure-native:subscriptionId` from the stack file, else AZURE_SUBSCRIPTION_ID.
- ARM endpoint: the cloud `azure-native:environment` names (public, usgovernment, china), or the base URL in
  GPUSHARE_ARM_ENDPOINT (Azure Stack Hub, a local stub in tests). TLS trust is the `requests` transport's: the
  system store, or REQUESTS_CA_BUNDLE.
- Credentials: azure-identity's `DefaultAzureCredential` (az login, a service principal or workload identity in
  the environment, AZURE_TOKEN_CREDENTIALS), one per run, shared by every client (`SharedCredential`).
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpushare.azure.remote_read import ReadDeadline
from gpushare.errors import AzureReadError, GpushareError
from gpushare.model.environment_variables import ARM_ENDPOINT_ENV, AUTHORITY_ENV, SUBSCRIPTION_ENV
from gpushare.model.stack import AzureEnvironment, StackConfig

# azure-core is imported where a read needs it, like azure-identity and the azure-mgmt clients: an offline `plan`
# reads nothing from Azure, and loading it is 0.04 s of every plan.
if TYPE_CHECKING:
    from azure.core.credentials import AccessToken, TokenCredential
    from azure.core.exceptions import AzureError, ClientAuthenticationError, HttpResponseError

# azure-identity logs its chain's failure as a multi-line WARNING, which logging's last-resort handler prints on
# stderr when the application configured no logging; `read_error` reports that failure itself, in one line. A
# handler here stops the last resort only: a user who configures logging (root handlers) still gets the record.
logging.getLogger("azure.identity").addHandler(logging.NullHandler())

CLIENT_DEFAULTS: Mapping[str, float] = {
    "retry_total": 3,
    "retry_backoff_factor": 1.0,
    "retry_backoff_max": 10,
    "timeout": 90,
    "connection_timeout": 10,
    "read_timeout": 60,
}
"""Azure SDK settings for every read, overridable per call.

azure-core retries 408, 429, 500, 502, 503 and 504 and connection errors. Its defaults (10 retries, 300 s socket
timeouts, a week's overall timeout) could stall a `pulumi preview` for many minutes; here: at most 3 retries, waits
of 0, 2 and 4 s between them, or what Retry-After asks capped at 10 s (`gpushare.azure.sdk_bounds`, which azure-core
does not cap), 10 s to connect, 60 s of silence, 90 s for the whole call including retries, and all of it inside the
command's read deadline (`gpushare.azure.remote_read`)."""

CREDENTIAL_HINT = (
    "log in with `az login` (and `az account set --subscription <id>`), or in CI set AZURE_CLIENT_ID, "
    "AZURE_TENANT_ID and AZURE_CLIENT_SECRET / AZURE_FEDERATED_TOKEN_FILE, or run azure/login before gpushare"
)
DEFAULT_ARM_URL = "https://management.azure.com"

# Per cloud: the name of the SDK's cloud setting (an `azure.core.AzureClouds` member: ARM URL and token scope,
# azure.mgmt.core.tools.get_arm_endpoints), the ARM URL, and which of azure-identity's `AzureAuthorityHosts`
# DefaultAzureCredential signs in at.
_CLOUDS: Mapping[AzureEnvironment, tuple[str, str, str]] = {
    AzureEnvironment.PUBLIC: ("AZURE_PUBLIC_CLOUD", DEFAULT_ARM_URL, "AZURE_PUBLIC_CLOUD"),
    AzureEnvironment.USGOVERNMENT: ("AZURE_US_GOVERNMENT", "https://management.usgovcloudapi.net",
                                    "AZURE_GOVERNMENT"),
    AzureEnvironment.CHINA: ("AZURE_CHINA_CLOUD", "https://management.chinacloudapi.cn", "AZURE_CHINA"),
}


class AzureSettingsError(GpushareError):
    """The run does not say which subscription or endpoint to read: fixed in the stack file or the environment,
    before anything is sent to Azure, so it exits like an invalid stack file."""

    exit_code = 2


@dataclass(frozen=True)
class ArmTarget:
    """One subscription in one cloud: what every ARM client of a run is built for."""

    subscription_id: str
    environment: AzureEnvironment = AzureEnvironment.PUBLIC
    endpoint: str | None = None
    """GPUSHARE_ARM_ENDPOINT: replaces the cloud's ARM URL (the token scope stays the cloud's)."""

    @property
    def arm_url(self) -> str:
        return self.endpoint or _CLOUDS[self.environment][1]

    def client_kwargs(self) -> dict[str, object]:
        """`base_url` and `cloud_setting` for an azure-mgmt client."""
        from azure.core import AzureClouds

        return {"base_url": self.arm_url, "cloud_setting": AzureClouds[_CLOUDS[self.environment][0]]}


def arm_target(stack: StackConfig, environ: Mapping[str, str], subscription_id: str | None = None) -> ArmTarget:
    """The target for `stack`: `subscription_id` when the caller knows it (the program: the provider's), else the
    stack file's `azure-native:subscriptionId`, else AZURE_SUBSCRIPTION_ID."""
    subscription = subscription_id or stack.azure.subscription_id or environ.get(SUBSCRIPTION_ENV, "").strip()
    if not subscription and stack.azure.subscription_secret:
        raise AzureSettingsError(
            f"{stack.source}: `azure-native:subscriptionId` is a Pulumi secret, which gpushare cannot decrypt "
            f"outside `pulumi`: export {SUBSCRIPTION_ENV}=<id> (`az account show --query id -o tsv` prints the "
            "current one)"
        )
    if not subscription:
        raise AzureSettingsError(
            f"{stack.source}: no Azure subscription to read: set `azure-native:subscriptionId: <id>` in the stack "
            f"file (the provider deploys there too) or export {SUBSCRIPTION_ENV}=<id> "
            "(`az account show --query id -o tsv` prints the current one)"
        )
    endpoint = environ.get(ARM_ENDPOINT_ENV, "").strip().rstrip("/") or None
    if endpoint is not None and not endpoint.startswith("https://"):
        raise AzureSettingsError(
            f"{ARM_ENDPOINT_ENV}={endpoint!r}: must be an https:// base URL such as https://management.azure.com "
            "(Azure SDK clients send tokens over HTTPS only); unset it to use the cloud of azure-native:environment"
        )
    return ArmTarget(subscription, stack.azure.environment, endpoint)


@dataclass(frozen=True)
class AzureReads:
    """A target and the credential every read of the run uses."""

    target: ArmTarget
    credential: TokenCredential
    deadline: ReadDeadline = field(default_factory=lambda: ReadDeadline.from_environ(os.environ))
    """The command's (the CLI's `--read-deadline`), else one from GPUSHARE_READ_DEADLINE started here."""

    def read_kwargs(self) -> dict[str, object]:
        """What `deployed.read_live` and `region_offers.read_region` take besides their own arguments."""
        return {"credential": self.credential, "deadline": self.deadline, **self.target.client_kwargs()}


def client_settings(client_kwargs: Mapping[str, object]) -> dict[str, object]:
    """An azure-mgmt client's keywords: `CLIENT_DEFAULTS` under `client_kwargs`, bounded by the `deadline` among them
    (else one from GPUSHARE_READ_DEADLINE) through `gpushare.azure.sdk_bounds`'s retry policy and transport."""
    from gpushare.azure import sdk_bounds

    settings = {**CLIENT_DEFAULTS, **client_kwargs}
    deadline = settings.pop("deadline", None) or ReadDeadline.from_environ(os.environ)
    assert isinstance(deadline, ReadDeadline)
    return sdk_bounds.client_settings(deadline, settings)


def default_credential(environment: AzureEnvironment | None = None) -> TokenCredential:
    """azure-identity's `DefaultAzureCredential`, signing in at `environment`'s authority (None: its own default,
    which AZURE_AUTHORITY_HOST overrides). Imported on use: azure-identity with msal and cryptography takes about
    0.2 s to load, which an offline `plan` (the same program, no reads) never needs."""
    from azure.identity import AzureAuthorityHosts, DefaultAzureCredential

    if environment is None:
        return DefaultAzureCredential()
    return DefaultAzureCredential(authority=getattr(AzureAuthorityHosts, _CLOUDS[environment][2]))


class SharedCredential:
    """One `DefaultAzureCredential` for a whole run, created on first use and its tokens reused until shortly
    before they expire: each azure-mgmt client has its own token cache, and `az login`'s credential starts a CLI
    process per token. A context manager; closing it closes the credential it created."""

    _REFRESH_MARGIN = 300

    def __init__(self, environment: AzureEnvironment, environ: Mapping[str, str]) -> None:
        self._environment = None if environ.get(AUTHORITY_ENV) else environment
        self._credential: TokenCredential | None = None
        self._tokens: dict[tuple[str, ...], AccessToken] = {}
        self._lock = threading.Lock()

    def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
        with self._lock:
            cached = self._tokens.get(scopes)
            if cached and cached.expires_on - self._REFRESH_MARGIN > time.time() and not kwargs.get("claims"):
                return cached
            if self._credential is None:
                self._credential = default_credential(self._environment)
            token = self._credential.get_token(*scopes, **kwargs)
            self._tokens[scopes] = token
            return token

    def close(self) -> None:
        if self._credential is not None:
            self._credential.close()
            self._credential = None

    def __enter__(self) -> SharedCredential:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_error(what: str, err: AzureError, arm_url: str, role_hint: str) -> AzureReadError:
    """What failed and the fix, for each way the SDK can fail after its retries."""
    from azure.core.exceptions import (
        ClientAuthenticationError,
        DecodeError,
        HttpResponseError,
        ServiceRequestError,
        ServiceResponseError,
    )

    if isinstance(err, ClientAuthenticationError) and err.response is None:
        # No token at all: no credential in the chain worked. The fix first, then what needed it; of the chain's
        # report (one line per credential, ~2,000 characters) only what a credential that is set up here said.
        said = "; ".join(f"{name}: {reason}" for name, reason in _credential_attempts(err) if _was_set_up(reason))
        return AzureReadError(f"no usable Azure credentials: {CREDENTIAL_HINT}. Without them gpushare "
                              f"{what}" + (f" ({said})" if said else ""))
    if isinstance(err, ClientAuthenticationError):
        return AzureReadError(f"{what}: Azure rejected the credentials ({describe(err)}); {CREDENTIAL_HINT}")
    if isinstance(err, DecodeError):
        return AzureReadError(
            f"{what}: Azure answered with a body that is not JSON ({one_line(err)}); "
            "retry, and report it if it persists"
        )
    if isinstance(err, HttpResponseError) and err.status_code == 403:
        return AzureReadError(f"{what}: permission denied ({describe(err)}); {role_hint}")
    if isinstance(err, HttpResponseError):
        return AzureReadError(
            f"{what}: Azure returned an error ({describe(err)}); throttling and server errors were already "
            "retried, so retry later"
        )
    if isinstance(err, (ServiceRequestError, ServiceResponseError)):
        return AzureReadError(
            f"{what}: cannot reach Azure Resource Manager at {arm_url} ({one_line(err)}); "
            "check the network, the proxy (HTTPS_PROXY) and DNS"
        )
    return AzureReadError(f"{what}: {type(err).__name__}: {one_line(err)}")


_NOT_SET_UP = re.compile(r"unavailable|not found|not installed|could not be found|requires the|no accounts were found",
                         re.IGNORECASE)
"""How azure-identity's credentials say they have nothing to offer on this machine (as opposed to failing)."""


def _credential_attempts(err: ClientAuthenticationError) -> list[tuple[str, str]]:
    """(credential, its one-line reason) from a chained credential's message (`\tName: reason` lines), or the
    whole message as one attempt when it has no such lines."""
    text = getattr(err, "message", None) or str(err)
    attempts = [(m["name"], m["reason"].strip()) for m in re.finditer(r"^\t(?P<name>\w+): (?P<reason>.*)$", text,
                                                                          re.MULTILINE)]
    return attempts or [("credential", one_line(err))]


def _was_set_up(reason: str) -> bool:
    return not _NOT_SET_UP.search(reason)


def unexpected_body(what: str, err: Exception) -> AzureReadError:
    """The SDK deserialises a body lazily while a pager is iterated, and raises AttributeError, TypeError or
    ValueError (DeserializationError is one) when it does not have the operation's shape."""
    detail = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    return AzureReadError(f"{what}: Azure answered with an unexpected body ({detail}); retry, and report it if it "
                          "persists")


def arm_code(err: HttpResponseError) -> str | None:
    return err.error.code if err.error else None


def describe(err: HttpResponseError) -> str:
    """`HTTP 403 AuthorizationFailed: <ARM's message>` from an SDK error."""
    if err.error and err.error.code:
        return f"HTTP {err.status_code} {err.error.code}: {err.error.message}"
    return f"HTTP {err.status_code} {err.reason or ''}".rstrip()


def one_line(err: Exception) -> str:
    """The error's text on one line: SDK and credential messages span several."""
    text = getattr(err, "message", None) or str(err)
    return " ".join(line.strip() for line in text.splitlines() if line.strip()) or type(err).__name__
