"""The only package that imports aiohttp: routes, handlers, middleware, TLS with reload."""
