# syntax=docker/dockerfile:1
# The Harness image: one image for every process (web, worker, scheduler, sidecar); the
# command picks which. Built from this source tree, never from a package index by name.
# Validated statically only (tests/deploy/); docs/deploy.md says what was and was not run.

# ---- build: a wheel of this tree -------------------------------------------------------
FROM python:3.12-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY . .
RUN pip wheel --no-deps --wheel-dir /wheels .

# ---- runtime --------------------------------------------------------------------------
FROM python:3.12-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    AGENT_WORKSPACE=/data/workspace \
    HARNESS_STATE_DIR=/data/state \
    HOST=0.0.0.0 \
    PORT=8000 \
    LOG_FORMAT=json

# bubblewrap: the shell's and the sidecar's sandbox (Debian's, setuid-free); it needs user
# namespaces, which the container runtime must allow (docs/deploy.md, "The sandbox in a
# container"); where it cannot run, AGENT_SHELL_SANDBOX=auto falls back to Landlock.
# tini: PID 1 forwards SIGTERM to harness and reaps the sandboxes' orphans.
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap tini \
 && rm -rf /var/lib/apt/lists/*

COPY --from=build /wheels /wheels
RUN pip install /wheels/*.whl && rm -rf /wheels

# A fixed numeric uid/gid, so Kubernetes' runAsNonRoot can check it and volumes can be
# chowned to it ahead of time.
RUN groupadd --system --gid 10001 harness \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/harness --create-home \
      --shell /usr/sbin/nologin harness \
 && mkdir -p /data/workspace /data/state /srv/harness \
 && chown -R 10001:10001 /data /srv/harness

# The folder the fleet runs in: `.env` and `mcp.json` (MCP_CONFIG) are looked for here, and
# are mounted by the operator, never baked in. No secret is set in this file.
WORKDIR /srv/harness
VOLUME ["/data"]
USER 10001:10001
EXPOSE 8000

ENTRYPOINT ["/usr/bin/tini", "--", "harness"]
CMD ["web"]
