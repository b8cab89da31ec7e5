"""Self-signed CA and serving certificates (cryptography), written with safe permissions."""
