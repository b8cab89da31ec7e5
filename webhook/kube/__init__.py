"""Live cluster mode: the only package that imports the `kubernetes` client.

Informers keep the cluster state the engine reads; writes (claim templates, ResourceQuotas,
PolicyReports, Events, a Lease) go through the API. Modules that need no API (scan.py) import
nothing from `kubernetes`, so standalone commands can use them; this file imports nothing.
"""
