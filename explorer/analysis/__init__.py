"""Pure computations: each module returns plain data (dataclasses, DataFrames), no widgets or plots."""
