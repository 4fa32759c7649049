"""Operations for DBAs: erase, export and import, maintenance, doctor."""
