"""The long-term memory loop: extraction, de-duplication, context assembly, decay."""
