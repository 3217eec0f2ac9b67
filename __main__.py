"""gpushare's Pulumi program: one AKS cluster, its GPU pools, the GPU Operator and the tenants, from the stack file.

The program's body is in the package (`gpushare.components.deployment`), so an installed gpushare (`gpushare plan`
from any directory) runs the very program `pulumi up` runs here. Validation runs before any resource registers; a bad
stack file stops `pulumi preview` with one message listing every problem, never a traceback.
"""

from gpushare.components.deployment import program

program()
