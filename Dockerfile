# The container image of netbox-plugin-bridge: the release binary, FROM scratch (SPEC §18).
# Build it from the release directory, with the CA certificates NetBox's TLS is checked with:
#
#   ./release && cp /etc/ssl/certs/ca-certificates.crt dist/
#   docker build -f Dockerfile --build-arg VERSION=$(git describe --tags --always --dirty) -t netbox-plugin-bridge dist
#
# (buildah bud takes the same arguments, and needs no registry.) It serves stateless
# streamable HTTP on :8080 as an unprivileged user; give it NETBOX_URL and either each
# caller's own NetBox token or a NetBox token with NETBOX_MCP_AUTH_TOKEN (README: Shared deployment).
FROM scratch
ARG VERSION
ARG TARGETARCH=amd64
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY netbox-plugin-bridge_${VERSION}_linux_${TARGETARCH} /netbox-plugin-bridge
USER 65534:65534
EXPOSE 8080
ENV NETBOX_MCP_HTTP=:8080
HEALTHCHECK --interval=10s --timeout=3s CMD ["/netbox-plugin-bridge", "healthcheck"]
ENTRYPOINT ["/netbox-plugin-bridge", "serve"]
