"""What a tenant's admission policy adds when `gpushare:queues.enabled`: Kueue's queued Jobs are let in before a pool is
chosen, and only Kueue starts them. The rules are the `queues` entries of `gpushare/kubernetes/admission/`'s YAML
files; this module holds the Kueue names they and the queues share.

Kueue v0.19.2's lifecycle of a `batch/v1` Job labelled `kueue.x-k8s.io/queue-name`:
1. created suspended (its mutating webhook sets `spec.suspend: true`, before validating admission runs), with no
   pool chosen: the tenant policy admits it while it is suspended and names one of the tenant's LocalQueues; every
   other rule (devices, QoS, tolerations) still judges its template;
2. admitted: Kueue's controller, as its service account, updates the Job (`pkg/controller/jobs/job/job_controller.go`
   `RunWithPodSetsInfo`): `spec.suspend: false`, `parallelism` (and `completions`) for partial admission, and the
   pod template's labels, annotations, nodeSelector, tolerations and schedulingGates merged with the flavor's
   (`pkg/podset/podset.go` `Merge`, which refuses to overwrite a key the template already sets). The result selects
   the flavor's pool by `gpushare.io/pool` and tolerates its taints, and is judged by the tenant policy's ordinary
   rules: a flavor of a pool the tenant does not list is refused;
3. preempted or evicted: the controller suspends it and restores the template (`RestorePodSetsInfo`), which is
   queued again under rule 1.
A CronJob whose job template names the tenant's LocalQueue is queued too: the CronJob controller copies the job
template's labels to each Job it creates, Kueue's webhook suspends that Job, and rule 1 admits it. A Job or CronJob may
name only the tenant's WorkloadPriorityClass (`priority_class_name`).
Unsuspending a queued Job is Kueue's alone: anyone else doing it (with a pool of their own choosing) would skip the
queue, so the policy refuses it. `pod-spec-changed` lets such an update be judged (a suspend change alone leaves
the template as it was).
"""

from __future__ import annotations

from gpushare.model.stack import Tenant

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
"""The label a Job names its LocalQueue with (Kueue `pkg/constants` QueueLabel)."""
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
"""The label a Job names its WorkloadPriorityClass with (Kueue `pkg/constants` WorkloadPriorityClassLabel)."""
ADMISSION_GATE = "kueue.x-k8s.io/admission"
"""The scheduling gate Kueue's pod webhook gives a pod it queues and its controller removes on admission (Kueue
`pkg/controller/jobs/pod/constants/constants.go` SchedulingGateName)."""
PODSET_LABEL = "kueue.x-k8s.io/podset"
"""The label Kueue writes into an admitted Job's pod template (Kueue `pkg/constants` PodSetLabel, set in
`pkg/controller/jobframework/reconciler.go` getPodSetsInfoFromStatus)."""
KUEUE_NAMESPACE = "kueue-system"
KUEUE_CONTROLLER_USER = f"system:serviceaccount:{KUEUE_NAMESPACE}:kueue-controller-manager"
"""Who Kueue's controller acts as: its chart's ServiceAccount `<fullname>-controller-manager` (`charts/kueue/templates/
manager/manager.yaml`, `serviceAccountName`), `<fullname>` being the release name `kueue` (`_helpers.tpl`
`kueue.fullname`: a release name that contains the chart's name is used as it is)."""


def local_queue_names(tenant: Tenant) -> list[str]:
    """The LocalQueues in the tenant's namespace (`gpushare.kubernetes.queues.local_queue`)."""
    return [tenant.name]


def priority_class_name(tenant: Tenant) -> str:
    """The tenant's WorkloadPriorityClass (`gpushare.kubernetes.queues.priority_class`), the one its policy lets it
    name."""
    return f"gpushare-{tenant.name}"
