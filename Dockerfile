# Build stage: dev dependencies (the @types packages tsc needs) and a compiler, then dist/.
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

# Runtime: the compiled service (bin/payorch.js finds dist/ built from these sources).
FROM node:20-bookworm-slim
WORKDIR /app
COPY --from=build /app /app
ENV DATA_DIR=/data PORT=8443 HTTP_PORT=8080
VOLUME /data
EXPOSE 8443 8080
# The heap cap keeps an instance under 250 MB of RSS under load (README, bench/README.md).
CMD ["node", "--max-old-space-size=384", "bin/payorch.js", "start"]
