"""Pure plotting functions: ``(result, ax=None) -> Axes/Figure``, matplotlib without pyplot."""
