"""The optimizer: goals in priority order, hard goals veto, least bytes moved; plan = diff of two models."""
