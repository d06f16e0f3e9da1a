"""Every check module, imported explicitly so the list is greppable (sqlfluff's get_rules idea)."""
