"""The admission tests judge the tenants' policies on every Kubernetes minor vapcheck builds: the newest the project
targets (the control-plane tier's) and the oldest a stack may pin (`KUBERNETES_MINORS`): a CEL function or a plugin
behaviour the older API server lacks fails there."""

from __future__ import annotations

import pytest

from tests.kubernetes.apiserver_admission import KUBERNETES_MINORS


@pytest.fixture(scope="module", params=KUBERNETES_MINORS, ids=lambda minor: f"k8s{minor}")
def kubernetes(request) -> str:
    """The Kubernetes minor whose ValidatingAdmissionPolicy plugin judges this module's requests; module-scoped, so
    each module's plugin clusters are started once per minor."""
    return request.param
