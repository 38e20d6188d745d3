# syntax=docker/dockerfile:1
# Government payment channel service: partner API (3000) + operator API (3001, loopback).
# The same image runs the simulated ministry systems: `node dist/simulator/bin/simulator.js`.
# See docs/deployment.md.

ARG NODE_IMAGE=node:20-slim

# ---- build: all dependencies, compile TypeScript to dist/, then drop dev dependencies ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY config ./config
COPY src ./src
COPY simulator ./simulator
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && npm cache clean --force

# ---- runtime: compiled code, production node_modules, non-root ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    ADMIN_PORT=3001 \
    DATA_DIR=/app/.data
WORKDIR /app
COPY --from=build --chown=root:root /app/package.json ./package.json
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
# Code stays root-owned and read-only for the service; only the PGlite directory is writable
# (used only when DATABASE_URL is unset, which is for a single instance).
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node
EXPOSE 3000 3001
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/api/v1/health/live').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node runs as PID 1 and handles SIGTERM itself (graceful shutdown: jobs, listeners, database).
CMD ["node", "--max-old-space-size=192", "--v8-pool-size=1", "--no-allocation-site-pretenuring", "dist/src/bin/api.js"]
