"""A Helm chart repository on loopback holding a stand-in `gpu-operator` chart, for the GPU Operator's Helm release.

NVIDIA's chart cannot be fetched offline (and its operator would need images and a kubelet), so the release the
engine tests install is the real `kubernetes:helm.sh/v3:Release`, run by the real provider's Helm, with gpushare's
real values, from this repository (`gpushare:operator.repository`), but its chart is a stand-in of the same name and
version: one ConfigMap, `gpushare-chart-values`, holding the values Helm rendered it with, so a test can read back
what reached Helm. Plain HTTP: gpushare accepts an `http://` repository (operator_config.REPOSITORY_RE).
"""

from __future__ import annotations

import functools
import hashlib
import io
import tarfile
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

CHART = "gpu-operator"
VALUES_CONFIG_MAP = "gpushare-chart-values"
_TEMPLATE = """apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  namespace: {{ .Release.Namespace }}
  labels: {app.kubernetes.io/managed-by: {{ .Release.Service }}}
data:
  values.json: {{ toJson .Values | quote }}
""" % VALUES_CONFIG_MAP


def _chart_archive(version: str) -> bytes:
    chart = {"apiVersion": "v2", "name": CHART, "version": version, "appVersion": version,
             "description": "gpushare's stand-in for NVIDIA's gpu-operator chart (tests/engine)"}
    files = {f"{CHART}/Chart.yaml": yaml.safe_dump(chart), f"{CHART}/values.yaml": "{}\n",
             f"{CHART}/templates/values.yaml": _TEMPLATE}
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


class ChartRepository:
    """The repository (a context manager); `url` is what `gpushare:operator.repository` names."""

    def __init__(self, version: str):
        self._tmp = tempfile.TemporaryDirectory(prefix="gpushare-charts-")
        folder = Path(self._tmp.name)
        archive = _chart_archive(version)
        tgz = f"{CHART}-{version}.tgz"
        (folder / tgz).write_bytes(archive)
        index = {"apiVersion": "v1", "generated": "2026-01-01T00:00:00Z", "entries": {CHART: [{
            "apiVersion": "v2", "name": CHART, "version": version, "appVersion": version, "urls": [tgz],
            "created": "2026-01-01T00:00:00Z", "digest": hashlib.sha256(archive).hexdigest()}]}}
        (folder / "index.yaml").write_text(yaml.safe_dump(index))
        handler = functools.partial(_Quiet, directory=str(folder))
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ChartRepository:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._tmp.cleanup()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass
