import jax

# float64 everywhere in tests, and no silent rank promotion (STYLE.md, habit 3).
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_rank_promotion", "raise")
