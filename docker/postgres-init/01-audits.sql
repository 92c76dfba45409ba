-- Only for the bundled compose database (a demo stand-in for the secretariat's own PostgreSQL):
-- an `audits` table shaped like the Rails `audited` gem's (timestamp(6), as Rails 7 creates it)
-- and the indexes docs/query.md recommends. Runs once, when the pg-data volume is created. The
-- integration tests create their audits table from this same file.
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
  created_at timestamp(6)
);
CREATE INDEX IF NOT EXISTS audits_user_id_id ON audits (user_id, id);
CREATE INDEX IF NOT EXISTS audits_action_id ON audits (action, id);
CREATE INDEX IF NOT EXISTS audits_created_at_id ON audits (created_at, id);
