# syntax=docker/dockerfile:1
# One image for both roles: the API (default command) and the worker
# (`node services/worker/dist/main.js`), so they always run the same job code.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.base.json ./
COPY shared/package.json shared/
COPY services/api/package.json services/api/
COPY services/worker/package.json services/worker/
COPY test/package.json test/
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY shared shared
COPY services services
RUN npx tsc -b

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    UPLOAD_DIR=/data/uploads \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
COPY package.json package-lock.json ./
COPY shared/package.json shared/
COPY services/api/package.json services/api/
COPY services/worker/package.json services/worker/
COPY test/package.json test/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/shared/dist shared/dist
COPY --from=build /app/services/worker/dist services/worker/dist
COPY --from=build /app/services/api/dist services/api/dist
COPY services/api/queries services/api/queries
# The named volume mounted here inherits this ownership on first use.
RUN mkdir -p /data/uploads && chown -R node:node /data && chmod 700 /data/uploads
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "services/api/dist/main.js"]
