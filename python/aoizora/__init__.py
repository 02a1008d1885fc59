"""AoiZora: topology-aware sharding and placement planning for diffusion transformers.

The analysis core is C++ (``aoizora._core``); this package holds the model zoo, lowering and
compilation with JAX, the planner and the command line.
"""

import pkgutil

# Development builds put _core in build/<dir>/pyroot/aoizora/; with that folder on
# PYTHONPATH next to python/, extending __path__ lets ``aoizora._core`` be found there.
__path__ = pkgutil.extend_path(__path__, __name__)

__version__ = "0.1.0"
