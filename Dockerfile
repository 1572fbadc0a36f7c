FROM node:20-slim
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
ENTRYPOINT ["node", "bin/switchboard.js"]
CMD ["start"]
