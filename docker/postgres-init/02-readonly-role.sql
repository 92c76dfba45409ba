-- The read-only role the compose API connects as (docs/query.md, "The database role").
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'censo_query') THEN
    CREATE ROLE censo_query LOGIN PASSWORD 'censo_query';
  END IF;
END $$;
GRANT CONNECT ON DATABASE censo TO censo_query;
GRANT USAGE ON SCHEMA public TO censo_query;
GRANT SELECT ON audits TO censo_query;
ALTER ROLE censo_query SET default_transaction_read_only = on;
