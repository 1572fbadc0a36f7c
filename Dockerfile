# Build stage: compile the TypeScript sources (no tests, no benches) and keep
# only the production dependencies.
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY kernel ./kernel
COPY app ./app
COPY src ./src
COPY adapters ./adapters
COPY channels ./channels
COPY moat ./moat
COPY providers ./providers
COPY tools ./tools
COPY prompts ./prompts
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

# Runtime: the compiled gateway, its prompts and production modules, as a non-root user.
FROM node:20-slim
# bubblewrap confines every tool command (tools.sandbox: bwrap); socat carries the
# sandbox's proxied network (tools.sandbox.network: egress); util-linux has prlimit.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap socat util-linux \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
COPY --from=build /app/prompts ./prompts
COPY --from=build /app/adapters/store/migrations ./adapters/store/migrations
# A fresh embedded data folder is unpacked from this (initdb and the migrations, done once).
COPY --from=build /app/adapters/db/seed ./adapters/db/seed
ENV NODE_ENV=production SWITCHBOARD_DATA=/app/data SWITCHBOARD_HTTP_HOST=0.0.0.0
# Not root: the sandbox then unshares a user namespace too (its commands cannot
# make their own), and the gateway's files are not root's.
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 8787
# /healthz answers 200 while the process serves (a worker serves it on SWITCHBOARD_METRICS_PORT when set: compose checks it there).
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.SWITCHBOARD_HTTP_PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "bin/switchboard.js"]
CMD ["start"]
