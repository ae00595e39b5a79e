"""The product's processes: runembedded, runstack and the in-process loops (see apps.py)."""
