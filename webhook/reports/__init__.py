"""Policy results for the platform team: collected off the request path."""
