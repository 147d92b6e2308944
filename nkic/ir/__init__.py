"""The tile IR: types, values and ops (`core`), the builder, the text form (printer, lark
grammar and parser) and the verifier."""
