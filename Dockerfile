# Quartermaster admission webhook.
#   docker build -t quartermaster:0.1.0 .
# The base is pinned to an exact Python release; pin it by digest too for reproducible builds:
#   docker build --build-arg PYTHON_IMAGE=python:3.11.14-slim-trixie@sha256:<digest> \
#                --build-arg BUILD_IMAGE=python:3.11.14-trixie@sha256:<digest> .
# Only pip packages are downloaded at build time (the project and its dependencies from PyPI).
ARG PYTHON_IMAGE=python:3.11.14-slim-trixie
# the build stage: the same Python release with a C compiler, for the request path's compiled modules (setup.py)
ARG BUILD_IMAGE=python:3.11.14-trixie

FROM ${BUILD_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY webhook ./webhook
RUN python -m venv /opt/quartermaster \
 && /opt/quartermaster/bin/pip install --no-compile . \
 && /opt/quartermaster/bin/python -m compileall -q /opt/quartermaster/lib \
 && cd / && /opt/quartermaster/bin/python -m webhook.compiled --require-all
# (from /, not /src: `python -m` puts the working directory first on sys.path, and /src holds the uncompiled
# sources, which the check would import instead of the installed package)

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="quartermaster" \
      org.opencontainers.image.description="Admission webhook and policy engine for shared GPU platforms" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/quartermaster/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/tmp
COPY --from=build /opt/quartermaster /opt/quartermaster
# the default policies; the Helm chart mounts its ConfigMap over this directory
COPY policies /etc/quartermaster/policies
# numeric, so that Kubernetes can check runAsNonRoot without a passwd entry
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["quartermaster"]
CMD ["serve", "--policies=/etc/quartermaster/policies", "--cert-dir=/tmp/certs"]
