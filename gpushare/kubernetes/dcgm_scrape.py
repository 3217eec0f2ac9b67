"""The scrape of the GPU Operator's dcgm-exporter that the showback rules read (`gpushare.showback.rules`):
a PodMonitor in the operator's namespace, keeping every label the exporter writes.

The operator's DaemonSet (NVIDIA/gpu-operator assets/state-dcgm-exporter/0800_daemonset.yaml at v26.7.0, the chart
version gpushare installs) labels its pods `app: nvidia-dcgm-exporter` and names the container port `metrics`
(9400, DCGM_EXPORTER_LISTEN), with DCGM_EXPORTER_KUBERNETES=true (the pod/namespace labels of the GPU's pod) and
the counters of dcp-metrics-included.csv. Its Service (0400_service.yaml) names the same port `gpu-metrics`: a
PodMonitor selects the pods, so it names the container's port.

- Azure Monitor managed Prometheus: `azmonitoring.coreos.com/v1` (the ama-metrics add-on's CRD), not the
  `ama-metrics-settings-configmap` `dcgmexporter` switch, which scrapes AKS's own exporter and keeps only the
  cluster, instance, gpu and job labels (GPU_I_ID, GPU_I_PROFILE, pod and namespace dropped).
- The Prometheus Operator: `monitoring.coreos.com/v1`.
"""

from __future__ import annotations

from typing import Any

from gpushare.sharing.operator_values import NAMESPACE

AZURE_MONITOR_API = "azmonitoring.coreos.com/v1"
PROMETHEUS_OPERATOR_API = "monitoring.coreos.com/v1"
DCGM_EXPORTER_POD_LABELS = {"app": "nvidia-dcgm-exporter"}
"""0800_daemonset.yaml spec.template.metadata.labels (v26.7.0)."""
DCGM_EXPORTER_PORT = "metrics"
"""0800_daemonset.yaml: the nvidia-dcgm-exporter container's port name (containerPort 9400)."""
POD_MONITOR_NAME = "gpushare-dcgm-exporter"
SCRAPE_INTERVAL = "30s"
"""Ten samples per 5-minute rule evaluation: a missed scrape leaves no gap (the chart's own ServiceMonitor takes
15s, finer than showback needs)."""


def dcgm_pod_monitor(api_version: str) -> dict[str, Any]:
    """The PodMonitor for `api_version` (AZURE_MONITOR_API or PROMETHEUS_OPERATOR_API); both groups take the same
    spec (the ama-metrics CRD is the Prometheus Operator's, renamed)."""
    return {
        "apiVersion": api_version, "kind": "PodMonitor",
        "metadata": {"name": POD_MONITOR_NAME, "namespace": NAMESPACE,
                     "labels": {"app.kubernetes.io/managed-by": "gpushare"}},
        "spec": {
            "selector": {"matchLabels": dict(DCGM_EXPORTER_POD_LABELS)},
            "podMetricsEndpoints": [{
                "port": DCGM_EXPORTER_PORT,
                "interval": SCRAPE_INTERVAL,
                # The exporter's pod/namespace labels name the GPU's pod; without honorLabels the scrape would
                # rename them exported_pod/exported_namespace and write the exporter pod's own.
                "honorLabels": True,
                # The rules join on `node` (kube-state-metrics' name for it): dcgm-exporter's own host label was
                # renamed Hostname -> hostname (dcgm-exporter #655), so the scrape writes it.
                "relabelings": [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}],
            }],
        },
    }
