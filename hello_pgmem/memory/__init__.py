"""Memory types and the MemoryManager."""

from hello_pgmem.memory.episodic import EpisodicMemory
from hello_pgmem.memory.manager import MemoryManager
from hello_pgmem.memory.semantic import SemanticMemory
from hello_pgmem.memory.working import WorkingMemory

__all__ = ["EpisodicMemory", "MemoryManager", "SemanticMemory", "WorkingMemory"]
