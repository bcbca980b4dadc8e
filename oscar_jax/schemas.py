"""Extra input conventions of the ecosystem (registered into ``oscar_jax.data.SCHEMAS``)."""
