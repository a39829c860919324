# syntax=docker/dockerfile:1
# Sluice in a container: `sluice` with git and the PostgreSQL server binaries, so every
# command works inside it, `sluice plan` included (it starts its own throwaway server).
#
#   docker build -t sluice .
#   docker run --rm -v "$PWD:/repo" sluice lint
#   docker run --rm -v "$PWD:/repo" -v sluice-cache:/var/cache/sluice sluice plan --base main
#
# The image runs as the unprivileged user `sluice` (uid 10001). For `sluice init`, add
# `--user "$(id -u):$(id -g)"` so the files it writes are yours (`sluice plan` needs the image's
# own user: initdb refuses a uid with no account).
# docker/smoke-test.sh builds this image and runs it on the bundled examples.

ARG DEBIAN=bookworm
ARG POSTGRES=15

# --- build: a release binary from the locked dependency set --------------------------------
FROM rust:1-slim-${DEBIAN} AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock build.rs ./
COPY link ./link
COPY src ./src
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
    && install -m 0755 target/release/sluice /usr/local/bin/sluice

# --- runtime: sluice, git, the PostgreSQL server binaries, a non-root user ----------------
FROM debian:${DEBIAN}-slim
ARG POSTGRES
# postgresql-common would create a cluster on install; Sluice starts its own servers. The
# mounted repository belongs to the host's user: safe.directory lets git and libgit2 read it.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-common \
    && sed -ri 's/^#?\s*create_main_cluster\b.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf \
    && apt-get install -y --no-install-recommends "postgresql-${POSTGRES}" git ca-certificates tini \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 --user-group sluice \
    && install -d -m 1777 /var/cache/sluice /repo \
    && git config --system --add safe.directory '*'
COPY --from=build /usr/local/bin/sluice /usr/local/bin/sluice
ENV SLUICE_PG_BINDIR=/usr/lib/postgresql/${POSTGRES}/bin \
    SLUICE_CACHE_DIR=/var/cache/sluice
USER 10001:10001
WORKDIR /repo
# tini reaps the PostgreSQL server's processes and forwards Ctrl-C, so Sluice can stop it.
ENTRYPOINT ["/usr/bin/tini", "--", "sluice"]
CMD ["--help"]
