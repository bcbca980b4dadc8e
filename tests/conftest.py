import os

# The CLI enables a persistent XLA cache in ~/.cache; tests must not write there.
os.environ.setdefault("OSCAR_JAX_CACHE_DIR", "off")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
