"""`quartermaster token-refresher`: the OIDC token-refresh sidecar of notebook pods.

Kept light: `webhook.cli` imports only `arguments` until the command runs, so the webhook's own
commands never load the OAuth client.
"""
