# syntax=docker/dockerfile:1
# One image for both roles: the API (default command) and the worker
# (`node services/worker/dist/main.js`), so they always run the same job code; and the CLI:
# `docker run --rm -v "$PWD:/work" -w /work <image> censo lote retornos -o divergencias.csv`.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.base.json ./
COPY shared/package.json shared/
COPY services/api/package.json services/api/
COPY services/worker/package.json services/worker/
COPY cli/package.json cli/
COPY test/package.json test/
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY shared shared
COPY services services
COPY cli cli
RUN npx tsc -b

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    UPLOAD_DIR=/data/uploads \
    HOST=0.0.0.0 \
    PORT=3000
WORKDIR /app
COPY package.json package-lock.json ./
COPY shared/package.json shared/
COPY services/api/package.json services/api/
COPY services/worker/package.json services/worker/
COPY cli/package.json cli/
COPY test/package.json test/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/shared/dist shared/dist
COPY --from=build /app/services/worker/dist services/worker/dist
COPY --from=build /app/services/api/dist services/api/dist
COPY --from=build /app/cli/dist cli/dist
COPY cli/bin cli/bin
COPY services/api/queries services/api/queries
COPY services/api/data services/api/data
COPY services/api/web services/api/web
# `censo` on the PATH.
RUN ln -sf /app/cli/bin/censo.js /usr/local/bin/censo
# The named volume mounted here inherits this ownership on first use.
RUN mkdir -p /data/uploads && chown -R node:node /data && chmod 700 /data/uploads
USER node
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "services/api/dist/main.js"]
