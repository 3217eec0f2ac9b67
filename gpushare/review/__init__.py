"""Review: the plan report, the pull-request report of a preview, plan comparison and changed stacks."""
