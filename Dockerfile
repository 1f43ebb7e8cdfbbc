FROM node:20-bookworm-slim
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
ENV DATA_DIR=/data PORT=8443 HTTP_PORT=8080
VOLUME /data
EXPOSE 8443 8080
CMD ["node", "bin/payorch.js", "start"]
