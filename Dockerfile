FROM node:20-slim
# bubblewrap confines every tool command (tools.sandbox: bwrap); socat carries the
# sandbox's proxied network (tools.sandbox.network: egress); util-linux has prlimit.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap socat util-linux \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
COPY adapters ./adapters
COPY channels ./channels
COPY moat ./moat
COPY providers ./providers
COPY tools ./tools
COPY prompts ./prompts
COPY test ./test
COPY bench ./bench
RUN npm ci --no-audit --no-fund && npm prune --omit=dev
ENV NODE_ENV=production
# Not root: the sandbox then unshares a user namespace too (its commands cannot
# make their own), and the gateway's files are not root's.
RUN mkdir -p /app/data && chown node:node /app/data
USER node
ENTRYPOINT ["node", "bin/switchboard.js"]
CMD ["start"]
