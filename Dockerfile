# The wirebench image for sharded runs on Kubernetes (`wirebench k8s`, docs/cluster.md):
# the binary on Debian 12 slim, with CA certificates and nothing else. The shards and the
# `--with-server` server run it as `wirebench run ...` and `wirebench serve ...`; the
# shards' init container needs the base image's bash.
#
#   docker build -t REGISTRY/wirebench:TAG . && docker push REGISTRY/wirebench:TAG

FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
# --locked: the image has the dependency versions the repository was tested with.
RUN cargo build --release -p wirebench --locked

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/wirebench /usr/local/bin/wirebench
CMD ["wirebench", "--help"]
