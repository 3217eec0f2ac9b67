"""`gpushare verify`: compare what the plan promises each GPU pool with what the live cluster shows.

One module per job: `expectations` (what each pool must show, from the plan), `api_json` (reading the API's JSON),
`pools` (the checks of each pool's nodes), `autoscaler` (what the cluster autoscaler makes of the nodes),
`tenant_drift` (rendered tenant objects against the live ones), `smoke` (the smoke pods), `report` (the verdict and
its JSON) and `text` (the text output). Quantities are read by `gpushare.model.quantity`.

Pure functions over the Kubernetes API's JSON (nodes, the device-plugin ConfigMap, the operator's DaemonSets and
pods as plain dicts; `gpushare.kubernetes.cluster_read` fetches them). Every mismatch comes with its likely cause and
the fix. Nodes still joining (pool below its size, NotReady, operator pods starting) are pending, not failures.

How each expectation lands on a node (device plugin v0.20.0, GPU Operator v26.7.0):
- allocatable: the device plugin advertises `gpushare.sharing.capacity.pool_capacity(...).resource` x `per_node`, from the
  config its node label `nvidia.com/device-plugin.config` selects in the ConfigMap. A label naming a missing key
  makes the config-manager exit ("specified config <x> does not exist", `cmd/config-manager/main.go`); no label
  selects `devicePlugin.config.default` (whole GPUs). The operator does not watch the ConfigMap: a changed config
  reaches running plugins only through a pod restart (GPU Operator docs, `gpu-sharing.rst`).
- GFD labels (`internal/lm/resource.go`, `mig-strategy.go`): `<resource>.product` is the NVML name, plus `-MIG-<slice>`
  for MIG devices, plus `-SHARED` when shared and not renamed; `<resource>.replicas` is per device (1 when unshared)
  and `<resource>.sharing-strategy` none|time-slicing|mps, where `<resource>` is the resource before the `.shared`
  rename (`nvidia.com/gpu`, or `nvidia.com/mig-<slice>` under `mixed`). `nvidia.com/mig.strategy` is the chart's
  strategy; `nvidia.com/mps.capable=true` gates the MPS control daemon.
- Operator DaemonSets (`assets/*/0500_daemonset.yaml`): `nvidia-device-plugin-daemonset`, `gpu-feature-discovery`,
  `nvidia-device-plugin-mps-control-daemon` (MPS nodes only) and `nvidia-operator-validator`, whose pod turns Ready
  only after its init containers driver-, toolkit-, cuda- and plugin-validation succeed: its readiness is the
  validator's verdict for the node.
"""
