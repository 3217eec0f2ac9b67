"""The Kubernetes side: tenants' objects and admission policy, the kubeconfig, and verify with its cluster reads."""
