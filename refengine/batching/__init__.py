"""vmap: batched tensors, batching rules, and the loop fallback."""
from .api import unwrap, vmap
from .batched import BatchedTensor, NotBatchable
from .runtime import record_fallbacks

__all__ = ["vmap", "unwrap", "BatchedTensor", "NotBatchable", "record_fallbacks"]
