"""The questions the CLI and every tab share, one function each."""
