-- The embedding queue: rows whose vector a worker makes after the write (docs/python.md, "Embeddings").
-- Applied by every migration in which this file changed (sql/README.md); tests/test_sql_live.py
-- holds it equal to a migrated database.
--
-- A write stores a memory or a chunk without its vector; these triggers queue it, in the same
-- transaction, for the model the writer names (pgmem.embedding_model; none: any worker's). Every
-- queueing and every new text of a queued row draws a new generation from one sequence
-- (embedding_generations) and clears the claim, so the vector a worker made of an older text is
-- never written, even when the row left the queue and came back meanwhile; a vector written by anyone else (a synchronous write, a
-- re-embedding) takes the row out. Workers find work with embedding_backlog, then claim, store
-- and fail rows in transactions scoped to one user or namespace (hello_pgmem/vectors/queries.py).

CREATE OR REPLACE FUNCTION queued_embedding_model() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT nullif(current_setting('pgmem.embedding_model', true), '') $$;
COMMENT ON FUNCTION queued_embedding_model() IS
    'The embedding model this transaction''s writes are queued for (setting pgmem.embedding_model), '
    'NULL when none is set: any worker''s model.';

CREATE OR REPLACE FUNCTION embedding_queue_channel() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path FROM CURRENT
AS $$ SELECT left('pgmem_queue_' || current_schema(), 63) $$;
COMMENT ON FUNCTION embedding_queue_channel() IS
    'The NOTIFY channel on which workers hear that rows were queued: pgmem_queue_ and the schema''s name.';

DROP FUNCTION IF EXISTS _check_queue_quota(text, text, bigint, integer);
CREATE OR REPLACE FUNCTION _check_queue_quota(p_kind text, p_scope text, p_most integer)
RETURNS void
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    v_waiting bigint;
BEGIN
    IF p_kind = 'user' THEN
        SELECT count(*) INTO v_waiting
        FROM (SELECT 1 FROM memory_embedding_queue q WHERE q.user_id = p_scope LIMIT p_most + 1) w;
    ELSE
        SELECT count(*) INTO v_waiting
        FROM (SELECT 1 FROM chunk_embedding_queue q WHERE q.namespace = p_scope LIMIT p_most + 1) w;
    END IF;
    IF v_waiting > p_most THEN
        RAISE EXCEPTION '% % would have more than % rows waiting for their vectors: the write is refused until the embedding workers catch up',
            p_kind, quote_literal(p_scope), p_most
            USING ERRCODE = 'configuration_limit_exceeded',
                  HINT = 'PGMEM_EMBEDDING_QUEUE_MAX_ROWS sets the quota of waiting rows per user and namespace (0: none).';
    END IF;
END $$;
COMMENT ON FUNCTION _check_queue_quota(text, text, integer) IS
    'Internal (called by _queue_new_rows, as the owner): refuse a write whose user (p_kind user) or '
    'namespace would have more than p_most rows waiting for their vectors.';

CREATE OR REPLACE FUNCTION _queue_new_rows()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_most integer := nullif(current_setting('pgmem.embedding_queue_max_rows', true), '')::integer;
    v_queued boolean;
BEGIN
    -- a statement trigger after an insert: its rows without a vector (a perceptual memory's
    -- vectors are made by its media encoder, in the write)
    IF TG_TABLE_NAME = 'memories' THEN
        INSERT INTO memory_embedding_queue (user_id, memory_id, model)
        SELECT r.user_id, r.id, queued_embedding_model() FROM new_rows r
        WHERE r.embedding IS NULL AND r.memory_type <> 'perceptual'
        ORDER BY 1, 2
        ON CONFLICT (user_id, memory_id) DO NOTHING;
    ELSE
        INSERT INTO chunk_embedding_queue (namespace, chunk_id, model)
        SELECT r.namespace, r.id, queued_embedding_model() FROM new_rows r
        WHERE r.embedding IS NULL
        ORDER BY 1, 2
        ON CONFLICT (namespace, chunk_id) DO NOTHING;
    END IF;
    v_queued := FOUND;
    -- the quota (pgmem.embedding_queue_max_rows, set by the application's connections; unset or 0: none):
    -- a write that leaves its user (namespace) more rows waiting than that is refused whole
    IF v_queued AND v_most > 0 THEN
        IF TG_TABLE_NAME = 'memories' THEN
            PERFORM _check_queue_quota('user', r.user_id, v_most) FROM (SELECT DISTINCT user_id FROM new_rows) r;
        ELSE
            PERFORM _check_queue_quota('namespace', r.namespace, v_most)
            FROM (SELECT DISTINCT namespace FROM new_rows) r;
        END IF;
    END IF;
    IF v_queued THEN
        PERFORM pg_notify(embedding_queue_channel(), '');
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _queue_new_rows() IS
    'Internal (statement trigger after an insert into memories or chunks): queue the new rows that '
    'have no vector, refuse the write past the quota of waiting rows (pgmem.embedding_queue_max_rows), and '
    'wake the workers.';

CREATE OR REPLACE FUNCTION _drop_stale_vector()
RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    -- a new text whose statement left the vector as it was: that vector is the old text's
    IF NEW.content IS DISTINCT FROM OLD.content AND NEW.memory_type <> 'perceptual'
       AND NEW.embedding IS NOT NULL AND NEW.embedding = OLD.embedding
       AND NEW.embedding_model IS NOT DISTINCT FROM OLD.embedding_model THEN
        NEW.embedding := NULL;
        NEW.embedding_model := NULL;
    END IF;
    RETURN NEW;
END $$;
COMMENT ON FUNCTION _drop_stale_vector() IS
    'Internal (row trigger before an update of a memory''s content): a new text that came without a new '
    'vector loses the old one, and is queued for its own.';

CREATE OR REPLACE FUNCTION vector_fingerprint(p_content text, p_heading_path text[] DEFAULT NULL)
RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT sha256(convert_to(coalesce(array_to_string(p_heading_path, ' > ') || E'\n', '') || p_content, 'UTF8')) $$;
COMMENT ON FUNCTION vector_fingerprint(text, text[]) IS
    'The fingerprint of the text a vector is made of: sha256 of a memory''s content, or of a chunk''s '
    'heading path, a newline and its content. Kept with each vector (embedded_hash).';

CREATE OR REPLACE FUNCTION _fingerprint_vector()
RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    IF TG_TABLE_NAME = 'memories' THEN
        IF NEW.memory_type = 'perceptual' THEN
            NEW.embedded_hash := NULL;  -- a vector of a file, not of the text
            RETURN NEW;
        END IF;
    END IF;
    IF NEW.embedding IS NULL THEN
        NEW.embedded_hash := NULL;
    ELSIF TG_OP = 'UPDATE' AND NEW.embedded_hash IS DISTINCT FROM OLD.embedded_hash THEN
        NULL;  -- the writer named the text it embedded (a worker: the text it claimed)
    ELSIF TG_OP = 'INSERT' AND NEW.embedded_hash IS NOT NULL THEN
        NULL;
    ELSIF TG_OP = 'INSERT' OR NEW.embedding IS DISTINCT FROM OLD.embedding
          OR NEW.embedding_model IS DISTINCT FROM OLD.embedding_model THEN
        -- a vector written in the same statement as its text (a write that embeds in the write)
        IF TG_TABLE_NAME = 'chunks' THEN
            NEW.embedded_hash := vector_fingerprint(NEW.content, NEW.heading_path);
        ELSE
            NEW.embedded_hash := vector_fingerprint(NEW.content);
        END IF;
    END IF;
    RETURN NEW;
END $$;
COMMENT ON FUNCTION _fingerprint_vector() IS
    'Internal (row trigger before a write of a memory''s or a chunk''s text or vector, the last of them): '
    'keep embedded_hash the fingerprint of the text the vector was made of: the one the writer names '
    '(a worker), else the row''s own text when the vector comes with it; NULL without a vector.';

CREATE OR REPLACE FUNCTION _requeue_memory()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    IF NEW.embedding IS NULL AND NEW.memory_type <> 'perceptual' THEN
        -- a new text, or a vector taken away: queued again, the older claim and failures forgotten
        INSERT INTO memory_embedding_queue AS q (user_id, memory_id, model)
        VALUES (NEW.user_id, NEW.id, queued_embedding_model())
        ON CONFLICT (user_id, memory_id) DO UPDATE
        SET generation = EXCLUDED.generation, model = coalesce(EXCLUDED.model, q.model), queued_at = now(),
            claimed_until = NULL, attempts = 0, retry_at = now(), last_error = NULL;
        PERFORM pg_notify(embedding_queue_channel(), '');
    ELSIF NEW.embedding IS NOT NULL THEN
        -- a vector written by another hand (a synchronous write, a re-embedding): nothing to make
        DELETE FROM memory_embedding_queue q WHERE q.user_id = NEW.user_id AND q.memory_id = NEW.id;
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION _requeue_memory() IS
    'Internal (row trigger after a memory''s text or vector changed): queue it again for the vector of its '
    'new text, or take it out of the queue once it has a vector.';

-- The two reads across every user run as the owner and ask for every row for their own statement
-- (a function's SET clause may not name a placeholder setting; set_config is undone after it).
CREATE OR REPLACE FUNCTION embedding_backlog(p_model text, p_limit integer)
RETURNS TABLE (kind text, scope text, due bigint)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_before text := current_setting('pgmem.all_rows', true);
BEGIN
    PERFORM set_config('pgmem.all_rows', 'on', true);
    RETURN QUERY
    SELECT w.kind, w.scope, w.due
    FROM (SELECT 'memory' AS kind, q.user_id AS scope, count(*) AS due, min(q.queued_at) AS oldest
          FROM memory_embedding_queue q
          WHERE (q.model = p_model OR q.model IS NULL) AND q.retry_at <= now()
            AND (q.claimed_until IS NULL OR q.claimed_until < now())
          GROUP BY q.user_id
          UNION ALL
          SELECT 'chunk', q.namespace, count(*), min(q.queued_at)
          FROM chunk_embedding_queue q
          WHERE (q.model = p_model OR q.model IS NULL) AND q.retry_at <= now()
            AND (q.claimed_until IS NULL OR q.claimed_until < now())
          GROUP BY q.namespace) AS w
    ORDER BY w.oldest, w.kind, w.scope
    LIMIT greatest(p_limit, 0);
    PERFORM set_config('pgmem.all_rows', coalesce(v_before, ''), true);
END $$;
COMMENT ON FUNCTION embedding_backlog(text, integer) IS
    'The users (kind memory) and namespaces (kind chunk) with rows a worker of p_model may claim now, '
    'the longest waiting first, with how many: where workers look for work. Names no text; runs as the '
    'owner over every user, so only the application role may call it (hello-pgmem grant --app).';
REVOKE ALL ON FUNCTION embedding_backlog(text, integer) FROM PUBLIC;

CREATE OR REPLACE FUNCTION embedding_queue_status()
RETURNS TABLE (kind text, model text, pending bigint, claimed bigint, failing bigint,
               oldest timestamptz, next_retry timestamptz)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_before text := current_setting('pgmem.all_rows', true);
BEGIN
    PERFORM set_config('pgmem.all_rows', 'on', true);
    RETURN QUERY
    SELECT w.kind, w.model, count(*), count(*) FILTER (WHERE w.claimed_until >= now()),
           count(*) FILTER (WHERE w.attempts > 0), min(w.queued_at),
           min(w.retry_at) FILTER (WHERE w.attempts > 0)
    FROM (SELECT 'memory' AS kind, q.model, q.claimed_until, q.attempts, q.queued_at, q.retry_at
          FROM memory_embedding_queue q
          UNION ALL
          SELECT 'chunk', q.model, q.claimed_until, q.attempts, q.queued_at, q.retry_at
          FROM chunk_embedding_queue q) AS w
    GROUP BY w.kind, w.model
    ORDER BY 1, 2;
    PERFORM set_config('pgmem.all_rows', coalesce(v_before, ''), true);
END $$;
COMMENT ON FUNCTION embedding_queue_status() IS
    'The embedding queue over every user and namespace, per kind (memory, chunk) and model: rows '
    'waiting, claimed by a worker now, failing (with a retry time), the oldest and the next retry. '
    'Counts only: no text, user or namespace.';
REVOKE ALL ON FUNCTION embedding_queue_status() FROM PUBLIC;

DROP FUNCTION IF EXISTS embedding_queue_retry(text);
CREATE OR REPLACE FUNCTION embedding_queue_retry(p_model text, p_error text)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
DECLARE
    v_before text := current_setting('pgmem.all_rows', true);
    v_memories bigint;
    v_chunks bigint;
BEGIN
    PERFORM set_config('pgmem.all_rows', 'on', true);
    UPDATE memory_embedding_queue q SET retry_at = now()
    WHERE q.attempts > 0 AND q.retry_at > now() AND (q.model = p_model OR q.model IS NULL)
      AND q.last_error = p_error;
    GET DIAGNOSTICS v_memories = ROW_COUNT;
    UPDATE chunk_embedding_queue q SET retry_at = now()
    WHERE q.attempts > 0 AND q.retry_at > now() AND (q.model = p_model OR q.model IS NULL)
      AND q.last_error = p_error;
    GET DIAGNOSTICS v_chunks = ROW_COUNT;
    PERFORM set_config('pgmem.all_rows', coalesce(v_before, ''), true);
    RETURN v_memories + v_chunks;
END $$;
COMMENT ON FUNCTION embedding_queue_retry(text, text) IS
    'Make every row waiting for a vector of p_model that failed with p_error (the model''s own failure: '
    'an outage) due now, whatever its back-off: a worker calls it when the model answers again, so that '
    'a model back from an outage is not kept waiting for minutes of back-off. A row that failed with an '
    'error of its own keeps its back-off. How many rows.';
REVOKE ALL ON FUNCTION embedding_queue_retry(text, text) FROM PUBLIC;
