"""gpushare: GPU sharing (MIG, time-slicing, MPS) on AKS, provisioned with Pulumi.

Grouped by the stage each module serves: `stackfile` (the stack file, its validation, the catalog), `sharing`
(what each pool advertises, device-plugin configs, operator values), `azure` (reads, preflight, the guard),
`kubernetes` (tenants, kubeconfig, verify), `review` (plan, PR and compare reports) and `cli`. These import no
Pulumi. `components` (the Pulumi ComponentResources) and `render` (the program under the mock engine) are the
Pulumi side.
"""
