"""Kueue v0.19.2's own manager (`sigs.k8s.io/kueue/cmd/kueue`, built by `tools/kueuecontroller/build`) run against a
control plane of `controlplane.py`, with Kueue's own CRDs (the module's `config/components/crd/bases`, which the
build copies beside the binary).

How it runs here, and why:
- As the admin (system:masters), through a kubeconfig (`--kubeconfig`, controller-runtime's flag).
- `internalCertManagement.enable: true`, as the chart runs it. With it off, `cmd/kueue/main.go` reads the metrics
  server's certificate from the fixed path `/etc/kueue/metrics/certs` (`certwatcher.New`) and exits when it is not
  there; a test cannot write there. On, Kueue makes its own CA and serving certificate (cert-controller's rotator,
  `pkg/util/cert`): it stores them in the Secret `kueue-webhook-server-cert` of `kueue-system`, which must exist
  (the chart creates it empty; so does `start_kueue`), writes them to `webhook.certDir` (a folder of the plane's),
  and injects the CA into the CRDs' conversion webhooks. The rotator reports ready only once every CRD of its list
  (localqueues, clusterqueues, workloads, cohorts, multikueueclusters) has `spec.conversion.webhook.clientConfig`, so
  those CRDs get Kueue's own conversion patch (`config/components/crd/patches/webhook_in_*.yaml`) with a URL on
  loopback in place of the Service (no kube-proxy here). The API server could not verify that webhook's certificate
  (it names `kueue-webhook-service.kueue-system.svc`, not 127.0.0.1), and it keeps a watch cache per version of a
  CRD, converting every object (served or not: it failed hundreds of times a minute with v1beta1 only unserved),
  so those CRDs keep only their storage version, v1beta2: nothing here reads v1beta1 (Kueue's manager uses
  v1beta2), and the webhook is never called.
- No admission webhook configuration is registered: Kueue's webhook server runs (its handlers are set up
  unconditionally, `webhooks.Setup`) but the API server does not call it, so the tests submit Jobs already
  suspended (what Kueue's Job webhook would do to a Job naming a LocalQueue).
- Integrations: `batch/job` by default, or those a test names (`pod`, as gpushare's chart values enable it);
  `manageJobsWithoutQueueName: false` (the default): only a Job labelled with a LocalQueue is Kueue's. Without the
  webhooks a pod is submitted as Kueue's pod webhook would leave it: labelled `kueue.x-k8s.io/managed`, with Kueue's
  finalizer and the `kueue.x-k8s.io/admission` scheduling gate.
- As the admin, or as a user a test names: `system:serviceaccount:kueue-system:kueue-controller-manager` is the
  identity the tenant policies let unsuspend Jobs and ungate pods (a static-token user of that name in
  `system:masters`: the chart's ClusterRole is not installed here).
- Every port on loopback, chosen at run time (health, metrics, webhook); no leader election; the feature
  `VisibilityOnDemand` off (its API server would listen on the fixed port 8082).
"""

from __future__ import annotations

import base64
import datetime
import http.client
import ipaddress
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests import go_tools
from tests.controlplane.controlplane import ADMIN, ApiError, ControlPlane, Process, free_port

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "tools" / "kueuecontroller" / "build"
NAMESPACE = "kueue-system"
SECRET = "kueue-webhook-server-cert"
"""The Secret the rotator keeps the certificates in (`InternalCertManagement.WebhookSecretName`'s default)."""
CONVERTED = ("localqueues", "clusterqueues", "workloads", "cohorts", "multikueueclusters")
"""The CRDs the rotator injects its CA into (`pkg/util/cert` `buildCertRotatorConfig`), which are those Kueue's
kustomization patches with a conversion webhook (`config/components/crd/kustomization.yaml`)."""
GROUP = "kueue.x-k8s.io"


def unavailable_reason() -> str | None:
    return go_tools.unavailable_reason(BUILD, "the Kueue controller tests")


def binary() -> Path:
    """The built manager (cached; several minutes the first time on a cold Go build cache)."""
    return go_tools.built(BUILD, timeout=3600)


def crds(webhook_port: int) -> list[dict[str, Any]]:
    """Kueue's CRDs as its kustomization makes them: the bases, with the conversion webhook on those it patches,
    reached by URL on loopback."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    found = []
    for path in sorted((binary().parent / "crd").glob("*.yaml")):
        crd = yaml.load(path.read_text(), Loader=loader)
        if crd["spec"]["names"]["plural"] in CONVERTED:
            crd["spec"]["conversion"] = {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": f"https://127.0.0.1:{webhook_port}/convert"},
                "conversionReviewVersions": ["v1"]}}
            crd["spec"]["versions"] = [v for v in crd["spec"]["versions"] if v["storage"]]
        found.append(crd)
    return found


def configuration(folder: Path, webhook_port: int, frameworks: tuple[str, ...] = ("batch/job",),
                  settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """Kueue's `Configuration` (config.kueue.x-k8s.io/v1beta2, `apis/config/v1beta2/configuration_types.go`), with
    `settings` (e.g. a MultiKueue manager's `multiKueue`) on top."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{free_port()}"},
        "metrics": {"bindAddress": f"127.0.0.1:{free_port()}"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(folder / "kueue-certs")},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": True},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": list(frameworks)},
        "featureGates": {"VisibilityOnDemand": False},
        **(settings or {}),
    }


def start_kueue(plane: ControlPlane, frameworks: tuple[str, ...] = ("batch/job",), user: str = ADMIN,
                settings: dict[str, Any] | None = None) -> Process:
    """Installs Kueue's CRDs and its namespace and Secret, then starts the manager as one of the plane's processes
    (stopped with them), acting as `user`; returns once it reports healthy and its ClusterQueue controller is
    running."""
    webhook_port = free_port()
    plane.install_crds(crds(webhook_port))
    for obj in ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET, "namespace": NAMESPACE}}):
        try:
            plane.create(obj)
        except ApiError as error:
            if error.status != 409:
                raise
    config = configuration(plane.folder, webhook_port, frameworks, settings)
    path = plane.folder / "kueue-config.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    process = plane.start("kueue", [str(binary()), f"--config={path}", f"--kubeconfig={plane.kubeconfig(user)}",
                                    "--zap-log-level=2"])
    mount_certificates(plane, process, Path(config["webhook"]["certDir"]))
    return process


def mount_certificates(plane: ControlPlane, process: Process, folder: Path) -> None:
    """The kubelet's part: the chart mounts the Secret at `webhook.certDir`, and the rotator waits for the files to
    appear there (cert-controller `ensureCertsMounted`) before it reports ready; here they are written once the
    rotator has filled the Secret."""
    def filled() -> dict[str, str] | None:
        if process.popen.poll() is not None:
            raise RuntimeError(f"kueue exited {process.popen.returncode} while starting:\n{process.tail()}")
        data = plane.get("v1", "Secret", SECRET, NAMESPACE).get("data") or {}
        return data if "tls.crt" in data and "tls.key" in data else None

    data = plane.wait_for(f"Secret {NAMESPACE}/{SECRET} filled by Kueue's cert rotator", filled)
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in data.items():
        (folder / name).write_bytes(base64.b64decode(value))


POD_WEBHOOK_PATH = "/mutate--v1-pod"
"""Kueue's mutating pod webhook (`pkg/controller/jobs/pod/pod_webhook.go`, `+kubebuilder:webhook:path=/mutate--v1-pod`;
the chart's `mpod.kb.io`)."""


class PodWebhookRelay:
    """Kueue's own pod webhook, called by the API server for pod creates in `namespaces`.

    The API server must verify the webhook's certificate against the name it dials. Kueue's rotator signs one for
    `kueue-webhook-service.kueue-system.svc` only (`pkg/util/cert/cert.go` buildCertRotatorConfig), which resolves
    to nothing here (no DNS, no kube-proxy), and with its certificate management off Kueue will not start (see the
    module docstring). So a relay on loopback, with a certificate of its own for 127.0.0.1, passes each
    AdmissionReview unchanged to Kueue's webhook server (verified by the CA Kueue's rotator made) and its answer back:
    the mutation is Kueue's code's, the relay moves bytes."""

    def __init__(self, plane: ControlPlane, namespaces: list[str]):
        config = json.loads((plane.folder / "kueue-config.yaml").read_text())
        certs = Path(config["webhook"]["certDir"])
        upstream = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        upstream.check_hostname = False  # the certificate names the Service; the CA is checked
        kueue_port = config["webhook"]["port"]

        class Relay(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                connection = http.client.HTTPSConnection("127.0.0.1", kueue_port, context=upstream, timeout=30)
                connection.request("POST", self.path, body, {"Content-Type": "application/json"})
                answer = connection.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        ca_pem, cert, key = _loopback_certificate(plane.folder / "kueue-relay")
        serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        serving.load_cert_chain(str(cert), str(key))
        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Relay)
        self.server.socket = serving.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        plane.create({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "kueue-pod-webhook-relay"},
            "webhooks": [{
                "name": "mpod.kb.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "failurePolicy": "Fail",
                "clientConfig": {"url": f"https://127.0.0.1:{self.server.server_address[1]}{POD_WEBHOOK_PATH}",
                                 "caBundle": base64.b64encode(ca_pem).decode()},
                "namespaceSelector": {"matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "In", "values": namespaces}]},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["pods"]}]}]})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _loopback_certificate(folder: Path) -> tuple[bytes, Path, Path]:
    """(CA certificate PEM, serving certificate file, key file): a CA and a certificate it signs for 127.0.0.1."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kueue relay CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    cert_file, key_file = folder / "tls.crt", folder / "tls.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return ca.public_bytes(serialization.Encoding.PEM), cert_file, key_file
