"""Every environment variable gpushare itself reads, with who sets it and who reads it: the contract between `plan`
(which runs the program under the mock engine) and the program, and the endpoints the Azure reads take.

Conventions gpushare follows where they apply are not listed: `KUBECONFIG` (`gpushare.kubernetes.cluster_read`),
`NO_COLOR`/`FORCE_COLOR` (`gpushare.cli`), and the Azure SDK's own variables, which azure-identity and the
azure-native provider read themselves.
"""

from __future__ import annotations

STACK_FILE_ENV = "GPUSHARE_STACK_FILE"
"""The stack file `plan` was given. Set by `plan` while it runs the program (`gpushare.render.mock_engine.run_program`;
unset by `gpushare.render.user_program` for a user's program); read by the program
(`gpushare.components.program.program`), so its messages name that file."""
DEPLOYED_FILE_ENV = "GPUSHARE_DEPLOYED_FILE"
"""An `az aks nodepool list -o json` file. Set by `plan --deployed FILE` (`gpushare.render.mock_engine.run_program`);
read by the guard (`gpushare.azure.guard.guard_runs.check_for_program`, `gpushare.azure.guard.cluster`), which checks against
that file instead of reading Azure, and by preflight (`gpushare.azure.preflight.preflight_runs.check_for_program`), which then
does not run."""
OFFLINE_ENV = "GPUSHARE_OFFLINE"
"""Any non-empty value: an offline render, nothing deployed to compare. Set by `plan` without `--deployed`
(`gpushare.render.mock_engine.run_program`, `gpushare.render.user_program`); read by the guard and preflight
(`check_for_program` in `gpushare.azure.guard.guard_runs` and `gpushare.azure.preflight.preflight_runs`), which then read nothing."""
ARM_ENDPOINT_ENV = "GPUSHARE_ARM_ENDPOINT"
"""An https:// Azure Resource Manager base URL (Azure Stack Hub; the tests' local stub) in place of the cloud
`azure-native:environment` names. Set by the user; read by `gpushare.azure.arm.arm_target` for every Azure read
(the guard, preflight, `gpushare preflight`)."""
SUBSCRIPTION_ENV = "AZURE_SUBSCRIPTION_ID"
"""The subscription to read outside `pulumi` when the stack file names none (or names it as a secret). Set by the
user; read by `gpushare.azure.arm.arm_target` (the program uses the provider's subscription instead)."""
AUTHORITY_ENV = "AZURE_AUTHORITY_HOST"
"""azure-identity's own authority setting. Set by the user; read by `gpushare.azure.arm.SharedCredential`, which then
leaves the authority to azure-identity instead of taking `azure-native:environment`'s."""
PRICES_ENDPOINT_ENV = "GPUSHARE_PRICES_ENDPOINT"
"""A scheme and host in place of `https://prices.azure.com` (a mirror, or a test stub). Set by the user; read by
`gpushare.azure.prices.prices_endpoint` (`gpushare prices`, `plan --prices`)."""
READ_DEADLINE_ENV = "GPUSHARE_READ_DEADLINE"
"""Seconds every remote read of one command must finish within, retries and waits included (default 120). Set by the
user, or by the commands' `--read-deadline`, which wins; read by `gpushare.azure.remote_read.ReadDeadline` for the
Azure reads (the CLI's and the program's guard and preflight), the Azure Retail Prices API and Prometheus."""
