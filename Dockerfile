# Causeway's container image. Two stages: the build has the dev dependencies (TypeScript) and
# packs the npm tarball; the runtime gets that tarball's files and the production dependencies
# only, installed from the lockfile. test/package/packed-install.test.ts repeats the runtime
# stage's steps outside a container, since the machines that run the tests have no engine.
ARG NODE_IMAGE=node:20.20.2-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# prepack builds dist/; the tarball holds only what package.json "files" lists.
RUN npm pack --pack-destination /tmp \
 && mkdir /app \
 && tar -xzf /tmp/causeway-mcp-*.tgz -C /app --strip-components=1 \
 && cp package-lock.json /app/ \
 && cd /app \
 && npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    CAUSEWAY_LISTEN_HOST=0.0.0.0 \
    CAUSEWAY_ADMIN_HOST=0.0.0.0
# glibc keeps two malloc arenas rather than eight per core: what a burst of new sessions
# allocated outside the V8 heap goes back instead of staying in the replica's RSS.
ENV MALLOC_ARENA_MAX=2
COPY --from=build /app /app
# Numeric, so that Kubernetes' runAsNonRoot can check it without reading /etc/passwd.
USER 10001:10001
WORKDIR /app
# 8080: MCP (HTTP/1.1 and h2c); 9464: /healthz, /readyz, /metrics.
EXPOSE 8080 9464
STOPSIGNAL SIGTERM
# Exec form throughout: nothing at run time needs a shell.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.CAUSEWAY_ADMIN_PORT || 9464) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "/app/dist/src/main.js"]
