"""What an extraction yields: entities and relations of one text, validated, and the protocol of
every extractor (rules, a chat model)."""

from __future__ import annotations

import re
from typing import Protocol

from pydantic import BaseModel, Field, field_validator, model_validator

from hello_pgmem.graph.normalize import normalize_name
from hello_pgmem.graph.not_entities import is_not_an_entity

_ENTITY_TYPE = re.compile(r"^[A-Z][A-Z_]{0,39}$")
MAX_ENTITIES = 50
MAX_RELATIONS = 100


class ExtractedEntity(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    type: str = "MISC"

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = value.strip()
        if not value or not normalize_name(value):
            raise ValueError("entity name must not be blank")
        return value

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        value = value.strip().upper().replace(" ", "_").replace("-", "_")
        return value if _ENTITY_TYPE.match(value) else "MISC"


class ExtractedRelation(BaseModel):
    source: str = Field(min_length=1, max_length=200)
    type: str = Field(min_length=1, max_length=60)
    target: str = Field(min_length=1, max_length=200)

    @field_validator("type")
    @classmethod
    def _type(cls, value: str) -> str:
        value = value.strip()
        if not value:
            raise ValueError("relation type must not be blank")
        return value


class Extraction(BaseModel):
    """Entities and relations of one text. Relation endpoints are always among the entities;
    words that are never entities (graph/not_entities.py) are dropped, with their relations."""

    entities: list[ExtractedEntity] = Field(default_factory=list, max_length=MAX_ENTITIES)
    relations: list[ExtractedRelation] = Field(default_factory=list, max_length=MAX_RELATIONS)

    @model_validator(mode="after")
    def _consistent(self) -> Extraction:
        merged: dict[str, ExtractedEntity] = {}
        for entity in self.entities:
            key = normalize_name(entity.name)
            if is_not_an_entity(key):
                continue
            known = merged.get(key)
            if known is None or (known.type == "MISC" and entity.type != "MISC"):
                merged[key] = entity
        relations: dict[tuple[str, str, str], ExtractedRelation] = {}
        for relation in self.relations:
            source, target = normalize_name(relation.source), normalize_name(relation.target)
            if source == target or is_not_an_entity(source) or is_not_an_entity(target):
                continue
            for name, key in ((relation.source, source), (relation.target, target)):
                merged.setdefault(key, ExtractedEntity(name=name))
            relations.setdefault((source, relation.type, target), relation)
        self.entities = list(merged.values())[:MAX_ENTITIES]
        self.relations = list(relations.values())[:MAX_RELATIONS]
        return self


class Extractor(Protocol):
    def extract(self, text: str) -> Extraction: ...
