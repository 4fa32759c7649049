"""RAG: documents to chunks to answers, in PostgreSQL."""
