"""HTML views, one module per area; each parses, authorizes, calls one service or query, renders."""
