-- Revision 0007: LangGraph store items may expire (expires_at, from their ttl). Idempotent: a
-- schema that revision 0001 made with this code has the column and the index.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS expires_at timestamptz;
COMMENT ON COLUMN memories.expires_at IS
    'When a LangGraph store item expires (its ttl after its last put, or its last read that '
    'refreshed it); NULL: never. Expired items are forgotten by the store''s sweep or by maintain.';
CREATE INDEX IF NOT EXISTS memories_expiring ON memories (expires_at) WHERE expires_at IS NOT NULL;
