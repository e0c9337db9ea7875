# Payload Tools as a container image: `docker build -t payload-tools .` (docs/container.md).
# Configuration is the environment the README documents, nothing else; this file
# sets only HOST, because the service's default (127.0.0.1) cannot be reached from outside a
# container.
#
# The base is an argument, so that an operator can pin a digest
# (`--build-arg BASE=node:24-bookworm-slim@sha256:…`) and a test can substitute a local image with
# the same contents (scripts/container-base.sh, test/container.system.test.ts). It must be Debian
# with Node in /usr/local, as the official node images are.
ARG BASE=node:24-bookworm-slim

# Compilers for better-sqlite3, the one native module (node-gyp).
FROM ${BASE} AS toolchain
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
ENV npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false
WORKDIR /app

# What `npm install` reads of package.json (its dependencies, workspaces, name, version and type),
# without its scripts and descriptions: a change to a script leaves this stage's output byte for
# byte the same, so the layer cache keeps the two installs below.
FROM toolchain AS manifest
COPY package.json package-lock.json ./
RUN node -e "const fs = require('fs'); const p = JSON.parse(fs.readFileSync('package.json')); \
for (const k of ['scripts', 'description']) delete p[k]; \
fs.writeFileSync('package.json', JSON.stringify(p, null, 2) + '\\n')"

# Production dependencies only, at the lockfile's versions. `npm install`, not `npm ci`: the
# lockfile lacks other platforms' optional binaries (docs/development.md, Install), which `npm ci` refuses.
# `--workspaces=false`: the MCP bridge workspace (clients/mcp-bridge) is its own npm package, not
# part of the service. The devDependencies are deleted first, not only omitted: TypeScript, a dev
# dependency and an optional peer of viem and @solana/kit, would otherwise be installed (23 MB).
# `--ignore-scripts`: the root `prepare` script builds the bridge; the one dependency with an
# install script, better-sqlite3, is then built explicitly: its prebuilt binary when that can be
# downloaded, else node-gyp with the compilers above and Node's own headers
# (/usr/local/include/node, `npm_config_nodedir`) rather than downloaded ones.
# npm's download cache is a build cache mount (BuildKit, buildah): kept between builds, so that a
# changed lockfile downloads only what changed, and never part of a layer.
FROM toolchain AS deps
COPY --from=manifest /app/package.json /app/package-lock.json ./
RUN --mount=type=cache,target=/root/.npm \
    npm pkg delete devDependencies \
 && npm install --omit=dev --workspaces=false --ignore-scripts \
 && npm_config_nodedir=/usr/local npm rebuild better-sqlite3 \
 && rm -rf node_modules/better-sqlite3/build/Release/obj* node_modules/better-sqlite3/deps

# The build: TypeScript to dist/ with the dev dependencies. The devnet (src/devnet: local
# chains, facilitator, nginx launcher) is compiled with the rest and then removed: nothing the
# service loads imports it, and its dependencies (anvil, litesvm) are dev-only.
FROM toolchain AS build
COPY --from=manifest /app/package.json /app/package-lock.json ./
RUN --mount=type=cache,target=/root/.npm npm install --workspaces=false --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json && rm -rf dist/devnet

FROM ${BASE}
WORKDIR /app
# `type: module` (dist/ is ES modules) and the name and version.
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The landing page's static files, read at start from src/http/landing/static/.
COPY src/http/landing/static ./src/http/landing/static
# ./data holds the SQLite telemetry store and the generated dev salt when DATABASE_URL and
# TELEMETRY_SALT are unset; it is a volume so that they outlive the container. Created before
# USER and VOLUME, so that a fresh volume is writable by the service's user.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME ["/app/data"]
# The official node images' unprivileged user (uid 1000).
USER node
ENV HOST=0.0.0.0
EXPOSE 8402
# The service drains on SIGTERM (calls in flight finish and settle) within SHUTDOWN_TIMEOUT_MS
# (30 s by default): give `docker stop` more than that (`--time`, compose `stop_grace_period`).
STOPSIGNAL SIGTERM
# GET /health on the port and address the service listens on (src/healthcheck.ts); 200 even when
# `degraded`, so an outage shared by every instance does not mark them all unhealthy.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "dist/healthcheck.js"]
# Node is PID 1 and handles SIGTERM and SIGINT itself (src/main.ts); logs are JSON lines on stdout.
# The command of `npm start`, flags included (one V8 platform thread, a larger young generation:
# docs/limits.md).
ENTRYPOINT ["node", "--v8-pool-size=1", "--max-semi-space-size=32", "dist/main.js"]
