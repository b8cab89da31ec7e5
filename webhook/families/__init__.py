"""Policy families besides the platform batteries, one subpackage each (registered by webhook.app)."""
