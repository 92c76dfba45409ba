-- Only for the bundled compose database (a demo stand-in for the secretariat's own PostgreSQL):
-- an `audits` table shaped like the Rails `audited` gem's, the indexes docs/query.md recommends,
-- and a read-only role for the query route. Runs once, when the pg-data volume is created.
CREATE TABLE IF NOT EXISTS audits (
  id bigserial PRIMARY KEY,
  auditable_id bigint,
  auditable_type varchar,
  associated_id bigint,
  associated_type varchar,
  user_id bigint,
  user_type varchar,
  username varchar,
  action varchar,
  audited_changes jsonb,
  version integer DEFAULT 0,
  comment varchar,
  remote_address varchar,
  request_uuid varchar,
  created_at timestamp
);
CREATE INDEX IF NOT EXISTS audits_user_id_id ON audits (user_id, id);
CREATE INDEX IF NOT EXISTS audits_action_id ON audits (action, id);
CREATE INDEX IF NOT EXISTS audits_created_at_id ON audits (created_at, id);

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
