"""`report`: the Markdown a reviewer reads for one stack's `pulumi preview --json`, most important first.

Order: errors from `diagnostics` (a guard or preflight stop, a protect error), the GPU table with its loud flags,
the GPU Operator release, the tenants (`review.tenant_changes`), a fleet member's update stage and the fleet-wide
delta, counts per operation, warnings, then every changed resource in a collapsed <details> that is the only part
cut to fit the size limit.

Input shape (`display.PreviewDigest`, pulumi pkg/backend/display/json.go): `{steps: [{op, urn, oldState, newState,
diffReasons, replaceReasons, detailedDiff}], diagnostics: [{urn, prefix, message, severity}], changeSummary: {op:
n}}`, where every key but `op` and `urn` of a step may be missing. `same` steps are hidden unless the preview ran
with `--show-sames` (the workflow passes it, so unchanged pools still show their capacity); a replace is one
`replace` step, or `create-replacement`/`delete-replaced` with `--show-replacement-steps`.

One module per job: `digest` (reading the JSON into steps), `transitions` (the GPU pools' and the operator's
transitions), `tenants` (the tenants' section), `pricing` (what the change costs), `fleet` (the fleet section),
`pr_comment` (`render_report`).
"""
