"""The hostile-input suite: each test sends what the worst client could, over real HTTP."""
