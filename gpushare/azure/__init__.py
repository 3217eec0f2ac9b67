"""Reading Azure: the ARM client and credential, deployed pools and cluster, region offers, preflight and the guard."""
