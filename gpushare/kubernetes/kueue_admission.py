"""What a tenant's admission policy adds when `gpushare:queues.enabled`: Kueue's queued Jobs are let in before a pool is
chosen, and only Kueue starts them.

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
Unsuspending a queued Job is Kueue's alone: anyone else doing it (with a pool of their own choosing) would skip the
queue, so the policy refuses it. `pod-spec-changed` lets such an update be judged (a suspend change alone leaves
the template as it was).
"""

from __future__ import annotations

from gpushare.model.stack import Tenant

QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
"""The label a Job names its LocalQueue with (Kueue `pkg/constants` QueueLabel)."""
KUEUE_NAMESPACE = "kueue-system"
KUEUE_CONTROLLER_USER = f"system:serviceaccount:{KUEUE_NAMESPACE}:kueue-controller-manager"
"""Who Kueue's controller acts as: its chart's ServiceAccount `<fullname>-controller-manager` (`charts/kueue/templates/
manager/manager.yaml`, `serviceAccountName`), `<fullname>` being the release name `kueue` (`_helpers.tpl`
`kueue.fullname`: a release name that contains the chart's name is used as it is)."""

SUSPEND_CHANGED = ("(request.kind.kind == 'Job' && dyn(object.spec).?suspend.orValue(false) != "
                   "dyn(oldObject.spec).?suspend.orValue(false))")
"""Added to the `pod-spec-changed` match condition, inside its UPDATE branch (oldObject is set)."""


def local_queue_names(tenant: Tenant) -> list[str]:
    """The LocalQueues in the tenant's namespace (`gpushare.kubernetes.queues.local_queue`)."""
    return [tenant.name]


def _cel_list(items: list[str]) -> str:
    return "[" + ", ".join(repr(item) for item in items) + "]"


def queue_variables(tenant: Tenant) -> list[tuple[str, str]]:
    label = f"metadata.?labels[?'{QUEUE_NAME_LABEL}'].orValue('')"
    return [
        ("queueName", f"request.kind.kind == 'Job' ? object.{label} : ''"),
        ("oldQueueName", f"request.kind.kind == 'Job' && request.operation == 'UPDATE' ? oldObject.{label} : ''"),
        ("suspended", "request.kind.kind == 'Job' && dyn(object.spec).?suspend.orValue(false)"),
        ("wasSuspended", ("request.kind.kind == 'Job' && request.operation == 'UPDATE' && "
                          "dyn(oldObject.spec).?suspend.orValue(false)")),
        ("queued", f"variables.suspended && variables.queueName in {_cel_list(local_queue_names(tenant))}"),
        ("byKueue", f"request.userInfo.?username.orValue('') == '{KUEUE_CONTROLLER_USER}'"),
    ]


QUEUED_UNLESS = "variables.queued"
"""Added to the pool rule: a queued Job has no pool yet; Kueue's admission gives it one."""


def queue_validations(tenant: Tenant) -> list[dict[str, str]]:
    queues = local_queue_names(tenant)
    wrong_queue = (f"Jobs in namespace {tenant.name} may name only its LocalQueue ({QUEUE_NAME_LABEL}: "
                   f"{', '.join(queues)}): another name is no queue of this tenant's, and Kueue would never admit it")
    start = (f"only Kueue ({KUEUE_CONTROLLER_USER}) may unsuspend a queued Job in namespace {tenant.name}: leave "
             f"spec.suspend true and Kueue starts it when the tenant's ClusterQueue admits it")
    return [
        {"expression": f"variables.queueName == '' || variables.queueName in {_cel_list(queues)}",
         "message": wrong_queue,
         "messageExpression": f"{_cel(wrong_queue)} + '; got ' + variables.queueName"},
        {"expression": ("variables.byKueue || !variables.wasSuspended || variables.suspended || "
                        "(variables.queueName == '' && variables.oldQueueName == '')"),
         "message": start},
    ]


def _cel(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

