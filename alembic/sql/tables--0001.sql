-- Tables of revision 0001. Runs with search_path set to the hello_pgmem schema.
-- hello_pgmem/schema.py holds the same definitions for SQLAlchemy Core; a test keeps them equal.

CREATE TABLE embedding_models (
    model        text PRIMARY KEY,
    dimension    integer NOT NULL,
    index_suffix text NOT NULL UNIQUE,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT embedding_models_dimension_range CHECK (dimension BETWEEN 1 AND 4000),
    CONSTRAINT embedding_models_model_name CHECK (btrim(model) <> '' AND length(model) <= 200)
);
COMMENT ON TABLE embedding_models IS
    'Embedding models in use; each has a partial HNSW index per vector table.';

-- Long-term memories of every type in one table: a memory changes type in place when it is
-- consolidated (keeping its id), searches span types in one ranked query, and the partial HNSW
-- indexes are per embedding model, not per type.
CREATE TABLE memories (
    user_id          text NOT NULL,
    id               uuid NOT NULL,
    memory_type      text NOT NULL,
    content          text NOT NULL,
    importance       double precision NOT NULL DEFAULT 0.5,
    session_id       text,
    modality         text,
    metadata         jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    last_accessed_at timestamptz,
    access_count     integer NOT NULL DEFAULT 0,
    forgotten_at     timestamptz,
    embedding        vector,
    embedding_model  text REFERENCES embedding_models (model),
    search_text      tsvector GENERATED ALWAYS AS (fts_document(content)) STORED,
    CONSTRAINT memories_pkey PRIMARY KEY (user_id, id),
    CONSTRAINT memories_user_id CHECK (btrim(user_id) <> '' AND length(user_id) <= 255),
    CONSTRAINT memories_memory_type CHECK (memory_type IN ('episodic', 'semantic', 'perceptual')),
    CONSTRAINT memories_content_not_blank CHECK (btrim(content) <> ''),
    CONSTRAINT memories_importance_range CHECK (importance >= 0 AND importance <= 1),
    CONSTRAINT memories_modality CHECK (modality IS NULL OR modality IN ('text', 'image', 'audio', 'video')),
    CONSTRAINT memories_metadata_object CHECK (jsonb_typeof(metadata) = 'object'),
    CONSTRAINT memories_access_count CHECK (access_count >= 0),
    CONSTRAINT memories_embedding_model CHECK ((embedding IS NULL) = (embedding_model IS NULL))
);
CREATE INDEX memories_user_type_created ON memories (user_id, memory_type, created_at);
CREATE INDEX memories_user_session ON memories (user_id, session_id, created_at);
CREATE INDEX memories_search_text ON memories USING gin (search_text);
COMMENT ON TABLE memories IS
    'Long-term memories (episodic, semantic, perceptual) with their embeddings.';

-- Working memory is volatile by design: UNLOGGED (fast, not replicated, emptied after a crash)
-- and every row carries its expiry.
CREATE UNLOGGED TABLE working_memories (
    user_id     text NOT NULL,
    id          uuid NOT NULL,
    session_id  text,
    content     text NOT NULL,
    importance  double precision NOT NULL DEFAULT 0.5,
    metadata    jsonb NOT NULL DEFAULT '{}'::jsonb,
    token_count integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    CONSTRAINT working_memories_pkey PRIMARY KEY (user_id, id),
    CONSTRAINT working_memories_user_id CHECK (btrim(user_id) <> '' AND length(user_id) <= 255),
    CONSTRAINT working_memories_content_not_blank CHECK (btrim(content) <> ''),
    CONSTRAINT working_memories_importance_range CHECK (importance >= 0 AND importance <= 1),
    CONSTRAINT working_memories_metadata_object CHECK (jsonb_typeof(metadata) = 'object'),
    CONSTRAINT working_memories_token_count CHECK (token_count >= 0),
    CONSTRAINT working_memories_expiry CHECK (expires_at > created_at)
);
CREATE INDEX working_memories_user_expires ON working_memories (user_id, expires_at);
CREATE INDEX working_memories_user_session ON working_memories (user_id, session_id, created_at);
COMMENT ON TABLE working_memories IS
    'Working memory: volatile by design (UNLOGGED), every row expires.';

CREATE TABLE documents (
    namespace    text NOT NULL,
    id           text NOT NULL,
    source_path  text,
    title        text,
    content_hash bytea NOT NULL,
    token_count  integer NOT NULL DEFAULT 0,
    chunk_count  integer NOT NULL DEFAULT 0,
    metadata     jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT documents_pkey PRIMARY KEY (namespace, id),
    CONSTRAINT documents_namespace CHECK (btrim(namespace) <> '' AND length(namespace) <= 255),
    CONSTRAINT documents_id CHECK (btrim(id) <> '' AND length(id) <= 255),
    CONSTRAINT documents_metadata_object CHECK (jsonb_typeof(metadata) = 'object')
);
COMMENT ON TABLE documents IS
    'RAG documents, one row per ingested source, grouped by namespace.';

CREATE TABLE chunks (
    namespace       text NOT NULL,
    id              uuid NOT NULL,
    document_id     text NOT NULL,
    position        integer NOT NULL,
    content         text NOT NULL,
    content_hash    bytea NOT NULL,
    heading_path    text[] NOT NULL DEFAULT '{}'::text[],
    start_char      integer NOT NULL,
    end_char        integer NOT NULL,
    token_count     integer NOT NULL,
    embedding       vector,
    embedding_model text REFERENCES embedding_models (model),
    search_text     tsvector GENERATED ALWAYS AS (fts_document(content)) STORED,
    CONSTRAINT chunks_pkey PRIMARY KEY (namespace, id),
    CONSTRAINT chunks_document_fkey FOREIGN KEY (namespace, document_id)
        REFERENCES documents (namespace, id) ON DELETE CASCADE,
    CONSTRAINT chunks_document_position UNIQUE (namespace, document_id, position),
    CONSTRAINT chunks_position CHECK (position >= 0),
    CONSTRAINT chunks_span CHECK (start_char >= 0 AND end_char >= start_char),
    CONSTRAINT chunks_token_count CHECK (token_count >= 0),
    CONSTRAINT chunks_embedding_model CHECK ((embedding IS NULL) = (embedding_model IS NULL))
);
CREATE INDEX chunks_search_text ON chunks USING gin (search_text);
COMMENT ON TABLE chunks IS
    'RAG chunks of documents, with heading path, character span and embedding.';

-- Shared across namespaces on purpose (the same text is embedded once); it holds vectors keyed
-- by a hash, never the text itself.
CREATE TABLE embedding_cache (
    model        text NOT NULL REFERENCES embedding_models (model) ON DELETE CASCADE,
    content_hash bytea NOT NULL,
    embedding    vector NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT embedding_cache_pkey PRIMARY KEY (model, content_hash)
);
COMMENT ON TABLE embedding_cache IS
    'Embeddings keyed by (model, sha256 of the embedded text); holds no text.';

CREATE TABLE entities (
    user_id     text NOT NULL,
    id          uuid NOT NULL,
    name        text NOT NULL,
    name_norm   text NOT NULL,
    entity_type text NOT NULL DEFAULT 'MISC',
    properties  jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT entities_pkey PRIMARY KEY (user_id, id),
    CONSTRAINT entities_user_name UNIQUE (user_id, name_norm),
    CONSTRAINT entities_name_not_blank CHECK (btrim(name) <> ''),
    CONSTRAINT entities_properties_object CHECK (jsonb_typeof(properties) = 'object')
);
COMMENT ON TABLE entities IS
    'Knowledge-graph entities, one per user and normalised name.';

CREATE TABLE mentions (
    user_id    text NOT NULL,
    memory_id  uuid NOT NULL,
    entity_id  uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT mentions_pkey PRIMARY KEY (user_id, memory_id, entity_id),
    CONSTRAINT mentions_memory_fkey FOREIGN KEY (user_id, memory_id)
        REFERENCES memories (user_id, id) ON DELETE CASCADE,
    CONSTRAINT mentions_entity_fkey FOREIGN KEY (user_id, entity_id)
        REFERENCES entities (user_id, id) ON DELETE CASCADE
);
CREATE INDEX mentions_user_entity ON mentions (user_id, entity_id);
COMMENT ON TABLE mentions IS 'Which memory mentions which entity.';

CREATE TABLE relations (
    user_id       text NOT NULL,
    source_id     uuid NOT NULL,
    relation_type text NOT NULL,
    target_id     uuid NOT NULL,
    memory_id     uuid NOT NULL,
    weight        double precision NOT NULL DEFAULT 1.0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT relations_pkey PRIMARY KEY (user_id, source_id, relation_type, target_id, memory_id),
    CONSTRAINT relations_source_fkey FOREIGN KEY (user_id, source_id)
        REFERENCES entities (user_id, id) ON DELETE CASCADE,
    CONSTRAINT relations_target_fkey FOREIGN KEY (user_id, target_id)
        REFERENCES entities (user_id, id) ON DELETE CASCADE,
    CONSTRAINT relations_memory_fkey FOREIGN KEY (user_id, memory_id)
        REFERENCES memories (user_id, id) ON DELETE CASCADE,
    CONSTRAINT relations_type_not_blank CHECK (btrim(relation_type) <> ''),
    CONSTRAINT relations_weight_positive CHECK (weight > 0)
);
CREATE INDEX relations_user_target ON relations (user_id, target_id);
CREATE INDEX relations_user_memory ON relations (user_id, memory_id);
COMMENT ON TABLE relations IS
    'Typed, weighted relations between entities, one row per asserting memory.';
