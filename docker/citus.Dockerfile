# A Citus node with pgvector, for the "citus" profile of docker-compose.yml: Citus Data's own
# image (PostgreSQL 17) plus the PGDG pgvector package. Reviewed, not exercised by CI: our
# development machines run no Docker engine (docs/citus.md).
FROM citusdata/citus:13.0.3
RUN apt-get update \
    && apt-get install -y --no-install-recommends postgresql-17-pgvector \
    && rm -rf /var/lib/apt/lists/*
