"""The real Pulumi engine for the tests: the CLI and the Kubernetes provider built from Go module source by
`tools/pulumi/build` (cached outside the clone), a local file backend, a passphrase secrets provider, and the
program run through the Python SDK's Automation API.

No Python language host binary exists here (its module, github.com/pulumi/pulumi/sdk/python/cmd/
pulumi-language-python/v3, is not served by the module proxy: see tools/pulumi/build). The Automation API does not
need one for an inline program: it serves the program's LanguageRuntime over gRPC in this process
(`pulumi.automation._server.LanguageServer`) and starts the CLI with `--client=127.0.0.1:PORT`; the CLI starts the
provider plugin itself, from PULUMI_HOME/plugins.

Nothing is downloaded: PULUMI_HOME is a fresh folder whose plugins/ is the build's, automatic plugin acquisition
is off, the update check is skipped, and the stack disables the default Kubernetes provider (`pulumi:
disable-default-providers`), so the engine never looks for a plugin it lacks (the SDK's own version, 4.34.2).
Go is needed: without it the tests skip with one line saying why, except under CI=true, where they must run.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from tests import go_tools

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "tools" / "pulumi" / "build"
PROJECT = "gpushare-engine"
PASSPHRASE = "gpushare engine tests"
PLUGIN = "plugins/resource-kubernetes-v4.25.0/pulumi-resource-kubernetes"


def built_tools() -> Path:
    """The build folder (bin/pulumi, plugins/); skips without Go (raises under CI=true), raises when the build
    fails."""
    folder = go_tools.built_or_skip(BUILD, "the Pulumi engine tests", timeout=5400)
    for binary in ("bin/pulumi", PLUGIN):
        if not os.access(folder / binary, os.X_OK):
            raise RuntimeError(f"{BUILD.relative_to(ROOT)} printed {folder}, which lacks {binary}")
    return folder


def inline_kubeconfig(url: str, ca: Path, token: str) -> str:
    """A self-contained kubeconfig (the CA inline): it travels as a secret config value."""
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": url, "certificate-authority-data":
                                               base64.b64encode(ca.read_bytes()).decode()}}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]})


@dataclass
class Run:
    """One engine operation: the engine's events (as JSON, in order) and what the CLI printed."""

    events: list[dict[str, Any]]
    stdout: str
    stderr: str = ""

    def steps(self) -> list[dict[str, Any]]:
        """The resourcePreEvent metadata (op, urn, type, ...) of every step, in the order the engine began them."""
        return [e["resourcePreEvent"]["metadata"] for e in self.events if "resourcePreEvent" in e]

    def order(self, name: str) -> tuple[int, int]:
        """(index of the event that began the step of the resource named `name`, of the one that ended it)."""
        def index(kind: str) -> int:
            return next(i for i, e in enumerate(self.events)
                        if kind in e and e[kind]["metadata"]["urn"].rsplit("::", 1)[1] == name)
        return index("resourcePreEvent"), index("resOutputsEvent")

    def ops(self) -> dict[str, str]:
        """urn -> op, for every step but `same`."""
        return {s["urn"]: s["op"] for s in self.steps() if s["op"] != "same"}


@dataclass
class Engine:
    tools: Path
    folder: Path
    env: dict[str, str] = field(default_factory=dict)

    @classmethod
    def start(cls, tools: Path) -> Engine:
        folder = Path(tempfile.mkdtemp(prefix="gpushare-engine-"))
        home, backend = folder / "pulumi-home", folder / "backend"
        home.mkdir()
        backend.mkdir()
        (home / "plugins").symlink_to(tools / "plugins")
        helm = folder / "helm"
        env = {
            "PULUMI_HOME": str(home),
            "PULUMI_BACKEND_URL": f"file://{backend}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            # The provider's Helm: its repository cache and config in the test's folder, never the user's.
            "HELM_CACHE_HOME": str(helm / "cache"), "HELM_CONFIG_HOME": str(helm / "config"),
            "HELM_DATA_HOME": str(helm / "data"),
            # The provider must not find the developer's own cluster by accident.
            "KUBECONFIG": str(folder / "no-kubeconfig"),
        }
        return cls(tools, folder, env)

    def stack(self, name: str, program: Callable[[], None], config: dict[str, tuple[str, bool]]) -> auto.Stack:
        """A new stack of the local backend running `program`; `config`: key -> (value, secret)."""
        workspace = auto.LocalWorkspaceOptions(
            work_dir=str(self.folder / "project"),
            pulumi_home=self.env["PULUMI_HOME"],
            pulumi_command=auto.PulumiCommand(root=str(self.tools)),
            env_vars=self.env,
            secrets_provider="passphrase",
            project_settings=auto.ProjectSettings(
                name=PROJECT, runtime="python", backend=auto.ProjectBackend(url=self.env["PULUMI_BACKEND_URL"])),
        )
        (self.folder / "project").mkdir(exist_ok=True)
        stack = auto.create_stack(name, project_name=PROJECT, program=program, opts=workspace)
        stack.set_all_config({key: auto.ConfigValue(value, secret=secret) for key, (value, secret) in config.items()})
        return stack


    def cli(self, args: list[str]) -> str:
        """The built `pulumi` with the tests' environment, in the project folder; raises with its stderr."""
        result = subprocess.run([str(self.tools / "bin" / "pulumi"), *args, "--non-interactive"],
                                cwd=self.folder / "project", env={**os.environ, **self.env}, capture_output=True,
                                text=True, timeout=300, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"pulumi {' '.join(args)} exited {result.returncode}: {result.stderr.strip()}")
        return result.stdout

    def state_file(self, stack: str) -> Path:
        """The stack's checkpoint as the file backend stores it (`<backend>/.pulumi/stacks/<project>/<stack>.json`)."""
        return Path(self.env["PULUMI_BACKEND_URL"].removeprefix("file://")) / ".pulumi" / "stacks" / PROJECT / \
            f"{stack}.json"


def recorded(operation: Callable[..., Any], **kwargs: Any) -> Run:
    """Runs `operation` (stack.up, stack.preview, stack.destroy) collecting its engine events."""
    events: list[dict[str, Any]] = []
    result = operation(on_event=lambda event: events.append(_event_json(event)), color="never", **kwargs)
    return Run(events, getattr(result, "stdout", ""), getattr(result, "stderr", ""))


def _event_json(event: auto.events.EngineEvent) -> dict[str, Any]:
    """The event as plain JSON with the event log's camelCase keys (the SDK hands over only the parsed object)."""
    return _plain(event)


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value  # OpType, DiffKind
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    out = {}
    for key, item in vars(value).items():
        if item is not None:
            out["".join(part.capitalize() if i else part for i, part in enumerate(key.split("_")))] = _plain(item)
    return out
